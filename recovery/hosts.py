"""Which hosts a provider target may call: an operator's allowlist, checked against a base URL.

An entry is a host name or an IP address, alone (any port) or with a port (``host:port``,
``[::1]:8443``). Names match exactly, case-insensitively; there are no wildcards, so a look-alike
(``api.openai.com.example``) or a sibling (``127.0.0.2`` next to ``127.0.0.1``) is never allowed
by accident. A URL is read with the same parser the SDKs send with (httpx2), so what is checked
is what would be called.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

import httpx2

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class HostRule:
    host: str  # lower-case name, or an IP address in its canonical spelling
    port: int | None = None  # None: any port

    def allows(self, host: str, port: int) -> bool:
        return self.host == host and self.port in (None, port)


@dataclass(frozen=True, slots=True)
class HostAllowlist:
    rules: tuple[HostRule, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> HostAllowlist:
        """Raises ValueError naming the first entry that is not a host or ``host:port``."""
        return cls(tuple(_rule(entry) for entry in entries if entry.strip()))

    def refusal(self, url: str) -> str | None:
        """Why ``url`` may not be called (a sentence for operators), or None when it may."""
        try:
            parsed = httpx2.URL(url)
        except (httpx2.InvalidURL, TypeError, ValueError):
            return "is not a valid URL"
        if parsed.scheme not in _DEFAULT_PORTS:
            return "must start with http:// or https://"
        if parsed.userinfo:
            return "must not carry a user name or password"
        if not parsed.host:
            return "has no host"
        host = _canonical_host(parsed.host)
        port = parsed.port or _DEFAULT_PORTS[parsed.scheme]
        if not 0 < port < 65536:
            return "has a port that is not a number from 1 to 65535"
        if not any(rule.allows(host, port) for rule in self.rules):
            return f"names host {_spelled(host, port)}, which is not an allowed provider host"
        return None


def _rule(entry: str) -> HostRule:
    raw = entry.strip().lower()
    if any(mark in raw for mark in ("/", "@", "?", "#")) or any(c.isspace() for c in raw):
        raise ValueError(f"{entry!r} is not a host or host:port (list hosts, not URLs)")
    host, port = _split_port(raw, entry)
    try:
        return HostRule(str(ipaddress.ip_address(host)), port)
    except ValueError:
        pass
    if not _HOST_NAME.match(host) or len(host) > 253:
        raise ValueError(f"{entry!r} is not a host or host:port")
    return HostRule(host, port)


def _split_port(raw: str, entry: str) -> tuple[str, int | None]:
    if raw.startswith("["):  # [v6] or [v6]:port
        host, bracket, rest = raw[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"{entry!r} is not a host or host:port")
        return host, _port(rest[1:], entry) if rest else None
    if raw.count(":") > 1:  # a bare IPv6 address, no port
        return raw, None
    host, colon, port = raw.partition(":")
    return host, _port(port, entry) if colon else None


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{entry!r} has a port that is not a number from 1 to 65535")
    return int(text)


def _canonical_host(host: str) -> str:
    host = host.lower()
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def _spelled(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
