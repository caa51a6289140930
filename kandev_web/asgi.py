import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kandev_web.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from kandev_web.access_log import access_log_redacted  # noqa: E402
from kandev_web.celery import app as celery_app  # noqa: E402
from kandev_web.daphne_websocket_close_codes import close_failed_sockets_with_a_code  # noqa: E402
from kandev_web.static_files import StaticFilesHandler  # noqa: E402
from kandev_web.warmup import broker_warm_up  # noqa: E402
from kandev_web.ws_origin import SameOriginValidator  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402

close_failed_sockets_with_a_code()
access_log_redacted()
# The first prompt must not pay for the broker transport's import and connection.
broker_warm_up(celery_app)

application = ProtocolTypeRouter(
    {
        # Daphne serves /static/ itself, through WhiteNoise from what collectstatic wrote (hashed
        # names cached for good), so one process is the whole web tier on one machine; a CDN or
        # proxy may take it over (kandev_web/static_files.py).
        "http": StaticFilesHandler(django_asgi_app),
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
