"""The websocket Origin check: a socket is accepted only from a page of this very site, compared by
scheme, host *and* port, or from an origin listed in CSRF_TRUSTED_ORIGINS.

It is the rule Django's CSRF check applies to a form post. A browser sends the session cookie with
a websocket handshake from any page, so without it a page on another port of the same host (or
any site) could open a socket as the logged-in user and read the transcript; channels'
AllowedHostsOriginValidator compares the host name only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str  # lower case; a leading "*." only in a CSRF_TRUSTED_ORIGINS pattern
    port: int

    @classmethod
    def parse(cls, value: str) -> Origin | None:
        """scheme://host[:port] of an http(s) origin, or None for anything else."""
        try:
            parts = urlsplit(value.strip())
            port = parts.port
        except ValueError:
            return None
        scheme = parts.scheme.lower()
        host = parts.hostname or ""  # lower case, IPv6 without its brackets
        if scheme not in DEFAULT_PORTS or not host or parts.path not in ("", "/"):
            return None
        return cls(scheme=scheme, host=host, port=port or DEFAULT_PORTS[scheme])

    def matches(self, pattern: Origin) -> bool:
        if (self.scheme, self.port) != (pattern.scheme, pattern.port):
            return False
        if pattern.host.startswith("*."):
            return is_same_domain(self.host, pattern.host[1:])
        return self.host == pattern.host


def socket_origin_allowed(*, origin: str | None, host: str | None, secure: bool) -> bool:
    """True when ``origin`` is this site as reached through ``host`` (the Host header) over
    ``secure`` or not, or a trusted origin. A missing or unparsable Origin is refused: browsers
    always send one with a websocket handshake."""
    if not origin or not host:
        return False
    claimed = Origin.parse(origin)
    if claimed is None:
        return False
    domain, _ = split_domain_port(host)
    if domain and validate_host(domain, settings.ALLOWED_HOSTS):
        scheme = "https" if secure else "http"
        site = Origin.parse(f"{scheme}://{host}")
        if site is not None and claimed.matches(site):
            return True
    trusted = (Origin.parse(value) for value in settings.CSRF_TRUSTED_ORIGINS)
    return any(pattern is not None and claimed.matches(pattern) for pattern in trusted)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


def _secure(scope: dict[str, Any]) -> bool:
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        meta_name, expected = proxy
        name = meta_name.removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1")
        value = _header(scope, name)
        return value is not None and value.split(",")[0].strip() == expected
    return False


class SameOriginValidator:
    """ASGI middleware for websocket scopes: refuses the handshake (403) unless the Origin is
    allowed by ``socket_origin_allowed``."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        allowed = socket_origin_allowed(
            origin=_header(scope, b"origin"), host=_header(scope, b"host"), secure=_secure(scope)
        )
        if allowed:
            return await self.application(scope, receive, send)
        # Closing before accepting refuses the handshake (HTTP 403); no consumer, channel layer
        # or database is touched for a socket that is not let in.
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.close"})
        return None
