"""A target that is set up wrong fails hard, and says how; weather on the wire stays weather.

Real SDK clients (through our adapters and transport) over real loopback sockets: a TLS server
with a self-signed certificate, a port nothing listens on, a server that resets the connection
after the stream started, a server answering 501/505. A host name that exists nowhere is failed
by an injected resolver, so no lookup or packet ever leaves this machine.
"""

from __future__ import annotations

import datetime
import ipaddress
import random
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from recovery.budget import Budget, RetrySettings
from recovery.classify import classify
from recovery.clock import FakeClock
from recovery.policy import Action, Decision, decide
from recovery.providers.anthropic import AnthropicAdapter
from recovery.providers.base import StreamTimeouts, TargetConfig
from recovery.providers.openai_compat import OpenAICompatAdapter
from recovery.taxonomy import Code, Kind, Phase, ProviderFailure

from .conftest import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, user_call

WIRES = ["anthropic", "openai"]
ADAPTERS = {"anthropic": AnthropicAdapter, "openai": OpenAICompatAdapter}
KEYS = {"anthropic": FAKE_ANTHROPIC_KEY, "openai": FAKE_OPENAI_KEY}
PATH = {"anthropic": "", "openai": "/v1"}
TIMEOUTS = StreamTimeouts(connect_s=10.0, idle_s=20.0, write_s=10.0)
NAME_THAT_RESOLVES = "provider.test"  # the injected resolver's only name: it means 127.0.0.1


class LoopbackResolver:
    """Knows one name; every other name does not exist. Records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, host: str) -> str:
        self.asked.append(host)
        if host in (NAME_THAT_RESOLVES, "127.0.0.1"):
            return "127.0.0.1"
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def open_call(wire: str, base_url: str, *, resolve=None, on_bytes=lambda _n: None):
    target = TargetConfig(
        provider_id=wire, base_url=base_url + PATH[wire], model="mock-1", api_key=KEYS[wire]
    )
    adapter = ADAPTERS[wire](target, timeouts=TIMEOUTS, resolve=resolve)
    try:
        stream = adapter.open(user_call("hello"), on_bytes=on_bytes, clock=FakeClock())
        try:
            list(stream.items())
        finally:
            stream.close()
    except ProviderFailure as failure:
        return failure
    finally:
        adapter.close()
    raise AssertionError("the call did not fail")


def decided(failure: ProviderFailure) -> Decision:
    clock = FakeClock()
    budget = Budget.start(settings=RetrySettings(jitter=0), clock=clock, target="primary")
    return decide(
        evidence=failure.evidence,
        classification=classify(failure.evidence),
        budget=budget.record_attempt(target="primary"),
        current_target="primary",
        fallbacks=(),
        clock=clock,
        rng=random.Random(1),
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---- a loopback TLS server whose certificate nobody trusts --------------------------------------


def self_signed_certificate(tmp_path) -> tuple[str, str, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(pem)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path), pem


class _Answer(BaseHTTPRequestHandler):
    status = 200

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.send_response(self.status)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a refused handshake is what these tests provoke


@contextmanager
def http_server(*, status: int = 200, tls: tuple[str, str] | None = None) -> Iterator[str]:
    handler = type("Handler", (_Answer,), {"status": status})
    server = _QuietServer(("127.0.0.1", 0), handler)
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("wire", WIRES)
def test_an_untrusted_certificate_is_a_hard_failure_that_names_it(tmp_path, wire):
    cert, key, pem = self_signed_certificate(tmp_path)
    with http_server(tls=(cert, key)) as url:
        # The server itself is fine: a client that trusts this certificate gets its answer.
        trusting = ssl.create_default_context(cadata=pem.decode())
        with httpx2.Client(verify=trusting, trust_env=False) as client:
            assert client.get(url).status_code == 200

        failure = open_call(wire, url)

    assert (failure.evidence.kind, failure.evidence.phase) == (Kind.CERTIFICATE, Phase.CONNECT)
    assert "TLS certificate verification failed" in failure.detail
    assert "certificate" in failure.detail.rsplit(":", 1)[1]  # OpenSSL's own reason follows
    decision = decided(failure)
    assert decision.classification.code is Code.TLS_CERTIFICATE_FAILED
    assert decision.action is Action.MANUAL
    assert decision.message.startswith("The provider's TLS certificate could not be verified.")


@pytest.mark.parametrize("wire", WIRES)
def test_a_base_url_whose_host_does_not_exist_is_a_hard_failure_that_names_it(wire):
    resolver = LoopbackResolver()

    failure = open_call(wire, "https://api.wrong-provider.invalid", resolve=resolver)

    assert resolver.asked == ["api.wrong-provider.invalid"]  # failed before any connection
    assert failure.evidence.kind is Kind.DNS
    assert "does not resolve" in failure.detail
    assert "wrong-provider" not in failure.detail  # the card's detail never names the host
    decision = decided(failure)
    assert decision.classification.code is Code.HOST_NOT_FOUND
    assert decision.action is Action.MANUAL
    assert decision.message.startswith("The provider's host name does not resolve.")


@pytest.mark.parametrize("wire", WIRES)
def test_a_refusal_at_a_non_local_base_url_is_a_hard_failure_that_names_it(wire):
    failure = open_call(
        wire, f"http://{NAME_THAT_RESOLVES}:{closed_port()}", resolve=LoopbackResolver()
    )

    assert failure.evidence.kind is Kind.REFUSED
    decision = decided(failure)
    assert decision.classification.code is Code.CONNECTION_REFUSED
    assert decision.action is Action.MANUAL
    assert decision.message.startswith("The provider refused the connection.")


@pytest.mark.parametrize("wire", WIRES)
def test_a_refusal_on_loopback_stays_weather(wire):
    # A local proxy that is still starting refuses too; that passes, so it is retried.
    failure = open_call(wire, f"http://127.0.0.1:{closed_port()}")

    assert failure.evidence.kind is Kind.NETWORK
    decision = decided(failure)
    assert decision.classification.code is Code.NETWORK_UNAVAILABLE
    assert decision.action is Action.RETRY


FIRST_EVENT = {
    "anthropic": b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"model":"mock-1","usage":{"input_tokens":1}}}\n\n',
    "openai": b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"mock-1",'
    b'"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}\n\n',
}


@contextmanager
def resetting_server(first_event: bytes, bytes_seen: threading.Event) -> Iterator[str]:
    """Answers 200 with an event stream, sends one event, then resets the connection (RST)
    once the client has read it: a connection lost mid-flight."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            request = b""
            while b"\r\n\r\n" not in request:
                request += connection.recv(65536)
            connection.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"cache-control: no-cache\r\n\r\n" + first_event
            )
            bytes_seen.wait(timeout=30)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        done.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        bytes_seen.set()
        thread.join(timeout=30)
        listener.close()
    assert done.is_set()


@pytest.mark.parametrize("wire", WIRES)
def test_a_reset_mid_flight_stays_transient(wire):
    seen = threading.Event()
    with resetting_server(FIRST_EVENT[wire], seen) as url:
        failure = open_call(wire, url, on_bytes=lambda _n: seen.set())

    assert (failure.evidence.kind, failure.evidence.phase) == (Kind.NETWORK, Phase.STREAM)
    decision = decided(failure)
    assert decision.classification.code is Code.NETWORK_UNAVAILABLE
    assert decision.action is Action.RETRY


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("status", [501, 505])
def test_501_and_505_are_hard(wire, status):
    with http_server(status=status) as url:
        failure = open_call(wire, url)

    assert failure.evidence.status == status
    decision = decided(failure)
    assert decision.classification.code is Code.PROVIDER_NOT_CONFIGURED
    assert decision.action is Action.MANUAL
