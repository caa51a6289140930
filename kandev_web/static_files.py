"""Daphne serves /static/ itself, before any middleware, through WhiteNoise: the files that
`collectstatic` wrote to STATIC_ROOT, under the hashed names of the manifest storage
(settings.STORAGES) with gzip copies. A hashed name (``js/live.e32219a24f3f.js``) is cached for a
year as immutable, since a changed file gets a new name and every page names the current one
through ``{% static %}``; pages themselves are never stored (security_headers.no_store_middleware),
so after a deploy a browser loads the new script instead of running yesterday's. An unhashed name
still answers, cached for a minute.

WhiteNoise (6.x) is WSGI middleware, and its Django middleware is sync only: in Django's chain it
would serve every file on the one sync thread, behind the views, counted against its caller's
admission (kandev_web/admission.py), and Django would warn that a file response is a synchronous
iterator. So Django's ASGIStaticFilesHandler does the ASGI part (the file is found off the sync
thread and its body handed to Daphne as an async iterator), and WhiteNoiseMiddleware, called as
ordinary Django middleware whose next step says "not a static file", picks the file and its
headers. A path that names no collected file (``/static/../kandev_web/settings.py`` among them:
WhiteNoise looks names up, it never joins them onto a directory) answers the site's 404.

Static answers get the site's Content-Security-Policy too (they pass no middleware): an SVG opened
on its own is a document, and every response carries the policy.

Overriding ``serve`` relies on Django's handler calling it for every static path (undocumented):
the names are checked when this module loads (kandev_web/pinned_internals.py), and the live
Daphne tests fail when a hashed file stops answering with WhiteNoise's immutable caching.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.asgi import ASGIHandler
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.utils.csp import CSP, build_policy
from whitenoise.middleware import WhiteNoiseMiddleware

from kandev_web.pinned_internals import names_check

PATCH = "kandev_web/static_files.py"
# What of Django's handler this module overrides, and what Django calls it through.
HANDLER_NAMES = ("serve", "get_response_async", "_should_handle")


def handler_check(owner: type = ASGIStaticFilesHandler) -> None:
    """Refuse (UnpatchableDependency) a Django whose static handler lacks what we override."""
    names_check(patch=PATCH, owner=owner, names=HANDLER_NAMES)


handler_check()


def not_a_static_file(request: HttpRequest) -> HttpResponseBase:
    raise Http404("No such static file")


def manifest_path() -> Path:
    # STORAGES names WhiteNoise's manifest storage; django-stubs types this lazy object as the
    # base Storage, which has no manifest.
    manifest_name = staticfiles_storage.manifest_name  # type: ignore[attr-defined]
    return Path(settings.STATIC_ROOT, manifest_name)


class StaticFilesHandler(ASGIStaticFilesHandler):
    def __init__(self, application: ASGIHandler) -> None:
        super().__init__(application)
        # With DEBUG off, pages name the manifest's hashed files: without them no page renders.
        if not settings.DEBUG and not manifest_path().is_file():
            raise ImproperlyConfigured(
                f"No collected static files in {settings.STATIC_ROOT} (no {manifest_path().name})."
                " Run `python manage.py collectstatic --noinput` (make run and the image do)."
            )
        self.whitenoise = WhiteNoiseMiddleware(get_response=not_a_static_file)

    def serve(self, request: HttpRequest) -> HttpResponse | FileResponse:
        return self.whitenoise(request)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        response = await super().get_response_async(request)
        if settings.SECURE_CSP and CSP.HEADER_ENFORCE not in response:
            response[CSP.HEADER_ENFORCE] = build_policy(settings.SECURE_CSP)
        return response
