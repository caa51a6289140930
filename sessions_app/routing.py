from django.urls import re_path

from sessions_app.board_consumer import BoardConsumer
from sessions_app.consumers import SessionConsumer

websocket_urlpatterns = [
    re_path(r"^ws/board/$", BoardConsumer.as_asgi()),
    re_path(r"^ws/sessions/(?P<session_id>\d+)/$", SessionConsumer.as_asgi()),
]
