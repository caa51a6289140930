"""Daphne serves /static/ through Django's ASGIStaticFilesHandler, which turns only Http404 into a
response: a path that climbs out of the static directories (``/static/../kandev_web/settings.py``,
``/static/%2e%2e/...``, ``/static/..%252f...``, which the handler unquotes once more) raised
SuspiciousFileOperation past Django's exception handling, and Daphne answered 500 with a
traceback in its log for every such anonymous request. Here a SuspiciousOperation gets the answer
Django gives one raised in a view: 400, logged on ``django.security.*`` (which settings.LOGGING
keeps to one short warning line, kandev_web.logfilters.ShortSecurityWarnings).

Static answers get the site's Content-Security-Policy too (they pass no middleware): an SVG opened
on its own is a document, and every response carries the policy.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousOperation
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponseBase
from django.utils.csp import CSP, build_policy


class StaticFilesHandler(ASGIStaticFilesHandler):
    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        try:
            response = await super().get_response_async(request)
        except SuspiciousOperation as refused:
            response = await sync_to_async(response_for_exception, thread_sensitive=False)(
                request, refused
            )
        if settings.SECURE_CSP and CSP.HEADER_ENFORCE not in response:
            response[CSP.HEADER_ENFORCE] = build_policy(settings.SECURE_CSP)
        return response
