"""Every request gets an id: the caller's X-Request-ID when it is a sane token, else a new one.
Log lines written while the request is handled carry it (recovery/logs.py), and the response
returns it, so a person reporting a problem can quote it."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from recovery.logs import bound

HEADER = "X-Request-ID"
_SANE = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


def request_id_of(request: HttpRequest) -> str:
    given = request.headers.get(HEADER, "")
    return given if _SANE.match(given) else uuid.uuid4().hex


def request_id_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        request_id = request_id_of(request)
        with bound(request_id=request_id):
            response = get_response(request)
        response[HEADER] = request_id
        return response

    return middleware
