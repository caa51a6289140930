"""Fair admission to the sync thread (kandev_web/admission.py): one caller's flood of requests
does not stand in front of another caller's request. Through Django's async handler, as Daphne
runs it: every sync view on one thread, first come, first served."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient

from sessions_app.api_auth import api_token_create
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

FLOOD = 30


@pytest.fixture(autouse=True)
async def _close_the_sync_threads_connection():
    """The views ran on the sync thread, which keeps its own database connection."""
    yield
    await sync_to_async(connections.close_all)()


@sync_to_async
def tokens() -> tuple[str, str]:
    return api_token_create(user=UserFactory()), api_token_create(user=UserFactory())


async def place_of_the_other_answer(flooder: str, other: str) -> int:
    """The flooder sends FLOOD requests at once, the other person one right after: the other's
    place among the answers as they come back (0 is first)."""
    client = AsyncClient()
    answered: list[str] = []

    async def ask(who: str, token: str) -> None:
        response = await client.get("/api/v1/tasks", headers={"authorization": f"Bearer {token}"})
        assert response.status_code == 200
        answered.append(who)

    await asyncio.gather(*(ask("flooder", flooder) for _ in range(FLOOD)), ask("other", other))
    return answered.index("other")


async def test_another_persons_request_is_answered_among_the_first_while_one_floods(settings):
    settings.KANDEV_USER_REQUESTS_AT_ONCE = 2
    flooder, other = await tokens()

    place = await place_of_the_other_answer(flooder, other)

    assert place <= 3, f"the other person's request was answered {place + 1}th of {FLOOD + 1}"


async def test_without_the_gate_the_flood_stands_in_front(settings):
    """What the gate is for: first come, first served puts the other person last."""
    settings.KANDEV_USER_REQUESTS_AT_ONCE = 0
    flooder, other = await tokens()

    place = await place_of_the_other_answer(flooder, other)

    assert place >= FLOOD // 2
