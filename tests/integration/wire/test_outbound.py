"""What an adapter sends: one request to its target's URL with its target's key, nothing else.

A redirect is never followed (not to another port, not to another host), and the worker's ambient
SDK settings (custom-header, organisation and proxy variables) never ride along. "Another host"
is 127.0.0.2: every byte of these tests stays on loopback.
"""

from __future__ import annotations

import pytest

from recovery.cancel import CancelToken
from recovery.guard import open_stream
from recovery.mock.testing import MockProvider, running_mock_server
from recovery.stream_events import TurnEnd
from recovery.taxonomy import ProviderFailure

from .conftest import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, user_call

WIRES = ["anthropic", "openai"]
KEYS = {"anthropic": FAKE_ANTHROPIC_KEY, "openai": FAKE_OPENAI_KEY}
PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}


def call(provider: MockProvider, wire: str, *, name: str = "") -> ProviderFailure | None:
    # A target of its own name gets an adapter of its own: adapters are cached per target, and a
    # cached SDK client would hide what a fresh one picks up from the environment.
    stream = open_stream(provider.target(wire, name=name), user_call("hello"), cancel=CancelToken())
    try:
        events = list(stream)
    except ProviderFailure as failure:
        return failure
    assert isinstance(events[-1], TurnEnd)
    return None


@pytest.fixture(scope="module", params=["another port", "another host"])
def elsewhere(request):
    """A second mock server a redirect points at: same host on another port, or 127.0.0.2."""
    host = "127.0.0.1" if request.param == "another port" else "127.0.0.2"
    with running_mock_server(host) as url:
        yield MockProvider(url)


def test_the_mock_logs_each_requests_headers_and_can_answer_with_a_redirect(mock_provider):
    assert call(mock_provider, "anthropic") is None
    headers = mock_provider.requests()[0]["headers"]
    assert headers["authorization"] == f"Bearer {MockProvider.fingerprint(FAKE_ANTHROPIC_KEY)}"
    assert FAKE_ANTHROPIC_KEY not in str(headers)

    mock_provider.redirect("http://127.0.0.1:9/v1/messages", status=308)
    assert call(mock_provider, "anthropic") is not None
    assert mock_provider.requests()[-1]["status"] == 308

    mock_provider.redirect_end()
    assert call(mock_provider, "anthropic") is None


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("status", [302, 307, 308])
def test_a_redirect_is_never_followed(mock_provider, elsewhere, wire, status):
    elsewhere.reset()
    mock_provider.redirect(f"{elsewhere.url}{PATHS[wire]}", status=status)

    failure = call(mock_provider, wire)

    assert failure is not None and failure.evidence.status == status
    assert [r["status"] for r in mock_provider.requests()] == [status]
    assert elsewhere.requests() == []  # neither the prompt nor the key went anywhere else


@pytest.mark.parametrize("wire", WIRES)
def test_the_workers_ambient_sdk_settings_never_ride_along(mock_provider, monkeypatch, wire):
    ambient = {
        "ANTHROPIC_CUSTOM_HEADERS": "X-Ambient-A: ambient-value-1",
        "OPENAI_CUSTOM_HEADERS": "X-Ambient-O: ambient-value-2",
        "OPENAI_ORG_ID": "org-ambient-value-3",
        "OPENAI_PROJECT_ID": "proj-ambient-value-4",
        "ANTHROPIC_AUTH_TOKEN": "ambient-value-5",
        "OPENAI_ADMIN_KEY": "ambient-value-6",
    }
    for name, value in ambient.items():
        monkeypatch.setenv(name, value)

    assert call(mock_provider, wire, name=f"ambient-{wire}") is None

    headers = mock_provider.requests()[0]["headers"]
    sent = " ".join(f"{name}: {value}" for name, value in headers.items())
    assert "ambient" not in sent.lower(), sent
    assert headers["authorization"] == f"Bearer {MockProvider.fingerprint(KEYS[wire])}"


def test_a_proxy_named_in_the_environment_is_not_used(mock_provider, monkeypatch):
    with running_mock_server("127.0.0.2") as proxy_url:
        proxy = MockProvider(proxy_url)
        # Only around the call: the test's own look at the mock's log must not be proxied.
        with monkeypatch.context() as env:
            for name in ("NO_PROXY", "no_proxy"):
                env.delenv(name, raising=False)
            for name in ("ALL_PROXY", "HTTP_PROXY", "http_proxy", "all_proxy"):
                env.setenv(name, proxy_url)
            failure = call(mock_provider, "anthropic", name="proxied")

        assert failure is None
        assert len(mock_provider.requests()) == 1
        assert proxy.requests() == []
