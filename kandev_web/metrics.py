"""GET /metrics: Prometheus metrics for operators (sessions_app.metrics says what and why Redis).

Only for staff: a signed-in staff session, or ``Authorization: Bearer <KANDEV_METRICS_TOKEN>``
for a scraper. No credentials at all: 401 (with a Bearer challenge); a signed-in non-staff user or
a wrong token: 403. The token is compared in constant time.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from sessions_app.metrics_export import metrics_text


def _bearer(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _token_ok(token: str) -> bool:
    expected = settings.KANDEV_METRICS_TOKEN
    return bool(expected) and hmac.compare_digest(token.encode(), expected.encode())


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    token = _bearer(request)
    if token is not None:
        if not _token_ok(token):
            return HttpResponse("Forbidden\n", status=403, content_type="text/plain")
    elif not request.user.is_authenticated:
        response = HttpResponse("Authentication required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    elif not request.user.is_staff:
        return HttpResponse("Forbidden\n", status=403, content_type="text/plain")
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_LATEST)
