"""Websocket routes. Any other path is accepted and closed with 4404, exactly as an unknown
session is, instead of failing the handshake with a server error."""

from typing import Any

from django.urls import re_path

from sessions_app.board_consumer import BoardConsumer
from sessions_app.consumers import CLOSE_NOT_FOUND, SessionConsumer


async def no_such_socket(scope: dict[str, Any], receive: Any, send: Any) -> None:
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": CLOSE_NOT_FOUND})


# django-stubs types re_path() for Django views only; channels' URLRouter routes ASGI applications
# through the same patterns, hence the ignores and the list of Any that URLRouter takes.
websocket_urlpatterns: list[Any] = [
    re_path(r"^ws/board/$", BoardConsumer.as_asgi()),  # type: ignore[arg-type]
    re_path(r"^ws/sessions/(?P<session_id>\d+)/$", SessionConsumer.as_asgi()),  # type: ignore[arg-type]
    re_path(r"", no_such_socket),  # type: ignore[arg-type]
]
