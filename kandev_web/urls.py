from django.contrib import admin
from django.urls import include, path

from kandev_web.healthz import healthz
from kandev_web.metrics import metrics_view
from sessions_app.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    # JSON API: routes under /api/v1/, OpenAPI document at /api/openapi.json.
    path("api/", api.urls),
    path("healthz", healthz, name="healthz"),
    # Prometheus metrics: staff session or KANDEV_METRICS_TOKEN (kandev_web/metrics.py).
    path("metrics", metrics_view, name="metrics"),
    # Pages, login/logout.
    path("", include("sessions_app.urls")),
]
