"""Websocket routes. Any other path is accepted and closed with 4404, exactly as an unknown
session is, instead of failing the handshake with a server error."""

from typing import Any

from django.urls import re_path

from sessions_app.consumers import CLOSE_NOT_FOUND, SessionConsumer


async def no_such_socket(scope: dict[str, Any], receive: Any, send: Any) -> None:
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": CLOSE_NOT_FOUND})


websocket_urlpatterns = [
    re_path(r"^ws/sessions/(?P<session_id>\d+)/$", SessionConsumer.as_asgi()),
    re_path(r"", no_such_socket),
]
