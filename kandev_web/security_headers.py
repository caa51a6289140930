"""Response headers every page and API answer carries.

- Content-Security-Policy (settings.SECURE_CSP, through Django 6's own middleware): scripts and
  styles only from this origin, so no inline script or style runs (templates/ holds none; htmx's
  own indicator <style> is switched off by the htmx-config meta tag in base.html and its two
  rules live in static/css/app.css). ``connect-src`` names this request's websocket origin
  (ws: or wss: of the same host and port) beside 'self': CSP Level 3 browsers match 'self' to
  it, older ones do not.
- Cache-Control: no-store on every page a signed-in person sees and every API answer, so a
  transcript never stays in a shared or back-button cache. Static files keep their own caching
  (they are served before any middleware).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.middleware.csp import ContentSecurityPolicyMiddleware

API_PREFIX = "/api/"


def socket_origin(request: HttpRequest) -> str | None:
    """ws://host:port (wss:// over HTTPS) of this request, or None when its host is not allowed."""
    try:
        host = request.get_host()
    except DisallowedHost:
        return None
    return f"{'wss' if request.is_secure() else 'ws'}://{host}"


def csp_config_for(request: HttpRequest) -> dict[str, list[str]]:
    """settings.SECURE_CSP with this request's websocket origin added to connect-src."""
    config: dict[str, list[str]] = {
        name: list(values) for name, values in settings.SECURE_CSP.items()
    }
    origin = socket_origin(request)
    if origin is not None:
        config.setdefault("connect-src", []).append(origin)
    return config


class SocketAwareCspMiddleware(ContentSecurityPolicyMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if not hasattr(response, "_csp_config"):  # a view's own policy wins, as in Django
            # The attribute Django's own csp_override decorator sets; django-stubs does not
            # declare it.
            response._csp_config = csp_config_for(request)  # type: ignore[attr-defined]
        return super().process_response(request, response)


def no_store_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        user = getattr(request, "user", None)
        if request.path.startswith(API_PREFIX) or (user is not None and user.is_authenticated):
            response["Cache-Control"] = "no-store"
        return response

    return middleware
