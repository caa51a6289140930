"""An httpx transport whose connections can be aborted from another thread.

Closing a socket from a second thread does not wake a thread blocked in recv() on Linux;
shutdown() does. The guard's watchdog and a CancelToken therefore need the live socket of the
attempt they govern. A thin network backend records every connection an attempt touches (new
or pooled) in the attempt's AbortScope, bound to the calling thread while the SDK sends.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import httpx2

from recovery.providers.base import StreamTimeouts, TargetConfig

_ACTIVE = threading.local()

# Host name -> the address to connect to; raises OSError (socket.gaierror) for a name that does
# not resolve. None: the operating system resolves, as for any client. Tests inject one so a
# name that exists nowhere fails before any packet leaves loopback.
Resolver = Callable[[str], str]


class AbortScope:
    """The connections of one attempt; abort() shuts them down so a blocked read returns now."""

    __slots__ = ("_lock", "_streams", "aborted")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: list[_TrackedStream] = []
        self.aborted = False

    def attach(self, stream: _TrackedStream) -> None:
        with self._lock:
            if stream not in self._streams:
                self._streams.append(stream)
            aborted = self.aborted
        if aborted:
            stream.shutdown()

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            streams = list(self._streams)
        for stream in streams:
            stream.shutdown()

    @contextmanager
    def bound(self) -> Iterator[None]:
        """Bind this scope to the current thread while the SDK sends the request."""
        previous = getattr(_ACTIVE, "scope", None)
        _ACTIVE.scope = self
        try:
            yield
        finally:
            _ACTIVE.scope = previous


class _TrackedStream(httpcore2.NetworkStream):
    __slots__ = ("_inner",)

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def _enlist(self) -> None:
        scope = getattr(_ACTIVE, "scope", None)
        if scope is not None:
            scope.attach(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._enlist()  # every request is written first, so this catches pooled connections too
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> _TrackedStream:
        return _TrackedStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def shutdown(self) -> None:
        sock = self._inner.get_extra_info("socket")
        if sock is None:
            return
        try:
            # The plain-socket method: SSLSocket.shutdown would also tear down TLS state that the
            # reading thread is still using.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass  # already closed or never connected: nothing left to wake


class _TrackingBackend(httpcore2.NetworkBackend):
    def __init__(self, inner: httpcore2.NetworkBackend, resolve: Resolver | None = None) -> None:
        self._inner = inner
        self._resolve = resolve

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        if self._resolve is not None:
            try:
                host = self._resolve(host)
            except OSError as error:  # as httpcore reports the OS resolver's failure
                raise httpcore2.ConnectError(str(error)) from error
        stream = _TrackedStream(
            self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        )
        stream._enlist()
        return stream

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        return _TrackedStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AbortableTransport(httpx2.HTTPTransport):
    def __init__(self, *, resolve: Resolver | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        pool = self._pool
        # httpcore reads the backend each time it opens a connection, so wrapping it here is
        # enough; the abort tests fail loudly if a release renames the attribute.
        pool._network_backend = _TrackingBackend(pool._network_backend, resolve)


_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every client of the process. Building one (loading the CA
    bundle) costs more CPU than everything else a turn does before its first request; a worker
    starting hundreds of turns at once would spend seconds on it. An SSLContext is
    safe to share between threads for client connections."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx2.create_ssl_context(trust_env=False)
        return _ssl_context


def abortable_http_client(
    *, connect_s: float, idle_s: float, write_s: float, resolve: Resolver | None = None
) -> httpx2.Client:
    """httpx client for an SDK: read timeout = idle timeout (exact, reset by any bytes).

    A request goes to its target's URL and nowhere else. Redirects are not followed: the SDKs'
    own clients follow them, and a redirect would carry the prompt and the key to whatever host
    it names. A redirect comes back as the provider's status and is judged like any other. The
    client does not read the environment (trust_env=False), and with a transport of our own the
    proxy variables never apply either."""
    timeout = httpx2.Timeout(connect=connect_s, read=idle_s, write=write_s, pool=connect_s)
    transport = AbortableTransport(
        verify=shared_ssl_context(),
        resolve=resolve,
        socket_options=[(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)],
    )
    return httpx2.Client(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    )


def without_ambient_headers(client: Any) -> Any:
    """Drop the headers an SDK client took from the worker's environment.

    Both SDKs add ``ANTHROPIC_CUSTOM_HEADERS`` / ``OPENAI_CUSTOM_HEADERS`` to every request
    whatever its base URL; a request must carry only what its target configures. We never pass
    custom headers, so the SDK's store of them is emptied. tests/integration/wire/test_outbound.py
    fails loudly if a release renames the attribute."""
    client._custom_headers = {}
    return client


def sdk_client[Client](
    make: Callable[..., Client],
    *,
    target: TargetConfig,
    timeouts: StreamTimeouts,
    resolve: Resolver | None,
) -> Client:
    """An SDK client (``anthropic.Anthropic``, ``openai.OpenAI``) for one target: its key and base
    URL, the SDK's own retries off because one loop owns every retry (the app's ladder), requests
    through an abortable client, and none of the headers the SDK read from the environment."""
    return without_ambient_headers(
        make(
            api_key=target.api_key,
            base_url=target.base_url,
            max_retries=0,
            http_client=abortable_http_client(
                connect_s=timeouts.connect_s,
                idle_s=timeouts.idle_s,
                write_s=timeouts.write_s,
                resolve=resolve,
            ),
        )
    )
