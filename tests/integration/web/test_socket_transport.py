"""The socket through a real Daphne on 127.0.0.1: what a client sees at the transport's limits."""

from __future__ import annotations

import aiohttp
import pytest
from channels.db import database_sync_to_async

from tests.integration.live_daphne import live_daphne
from tests.integration.web.conftest import session_cookie

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

MESSAGE_TOO_BIG = 1009


@pytest.fixture
def cookie(owner) -> str:
    return session_cookie(owner)


@pytest.mark.parametrize("size", [2 * 1024 * 1024, 5 * 1024 * 1024])
async def test_a_frame_over_the_transport_limit_is_closed_with_1009(
    cookie, session, tmp_path, size
):
    with live_daphne(log_path=tmp_path / "daphne.log") as base_url:
        async with aiohttp.ClientSession() as client:
            socket = await client.ws_connect(
                base_url.replace("http", "ws") + f"/ws/sessions/{session.pk}/",
                headers={"Origin": base_url, "Cookie": f"sessionid={cookie}"},
            )
            first = await socket.receive(timeout=30)
            assert first.type == aiohttp.WSMsgType.TEXT and "ws-seq" in first.data

            await socket.send_str("x" * size)
            closing = await socket.receive(timeout=30)

            assert closing.type == aiohttp.WSMsgType.CLOSE, closing
            assert socket.close_code == MESSAGE_TOO_BIG
    await database_sync_to_async(lambda: None)()
