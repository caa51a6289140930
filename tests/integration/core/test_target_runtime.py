"""The worker checks a target again each time it uses one: a row edited in the database directly
is refused before anything is read or sent, with one neutral card, and nothing the worker sends
carries a value that was not configured for that target.

Real mock provider servers over HTTP, the real SDKs, real Postgres. "Another host" is 127.0.0.2:
every byte stays on loopback.
"""

from __future__ import annotations

import json
import os
import socket

import pytest

from recovery import wording
from recovery.mock.testing import FAKE_ANTHROPIC_KEY, MockProvider, running_mock_server
from sessions_app.agent.runner import generation_run
from sessions_app.models import PromptGeneration, ProviderTarget, SessionEvent
from sessions_app.services import prompt_submit, session_create

pytestmark = pytest.mark.django_db(transaction=True)

# Values the worker holds that no target configures; a test sets them in its environment.
WORKER_SECRETS = {
    "SECRET_KEY": "django-secret-value-never-sent",
    "KANDEV_DEMO_PASSWORD": "demo-password-never-sent",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-never-sent",
}


@pytest.fixture(scope="module")
def other_host():
    """A second mock provider on another loopback host, which no allowlist names."""
    with running_mock_server("127.0.0.2") as url:
        yield MockProvider(url)


@pytest.fixture
def worker_env(monkeypatch):
    for name, value in WORKER_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_ANTHROPIC_KEY)


def run(owner, target: ProviderTarget, text: str = "hello") -> PromptGeneration:
    chat = session_create(owner=owner, target=target, title="Chat")
    generation = prompt_submit(session=chat, user=owner, text=text)
    generation_run(generation_id=generation.pk)
    generation.refresh_from_db()
    return generation


def card(generation: PromptGeneration) -> str:
    """What every viewer of the session reads about the failure (the stored message and the
    explanation pushed with the session's state)."""
    pushed = [
        e.payload.get("explanation", "")
        for e in SessionEvent.objects.filter(session=generation.session)
    ]
    return " ".join([generation.error_message, *pushed])


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def sent_headers(*providers: MockProvider) -> str:
    return json.dumps([r["headers"] for p in providers for r in p.requests()])


@pytest.mark.parametrize("key_env", ["SECRET_KEY", "KANDEV_DEMO_PASSWORD", "DATABASE_URL"])
def test_a_target_naming_a_worker_secret_is_refused_and_the_secret_never_leaves(
    owner, mock_provider, worker_env, key_env, caplog
):
    # Written straight to the database: no service would save it.
    target = ProviderTarget.objects.create(
        name="Claude", kind="anthropic", model="m", base_url=mock_provider.url, api_key_env=key_env
    )

    generation = run(owner, target)

    assert (generation.state, generation.error_code) == ("failed", "provider_not_configured")
    assert generation.error_message == wording.target_not_allowed("Claude")
    assert key_env not in card(generation)
    assert mock_provider.requests() == []
    secret = os.environ[key_env]
    assert MockProvider.fingerprint(secret) not in sent_headers(mock_provider)
    assert f"api_key_env {key_env} is not a provider key variable" in caplog.text


@pytest.mark.parametrize(
    "set_up",
    ["an open port", "a path that is not found", "a closed port", "a wrong key"],
)
def test_a_host_no_allowlist_names_gets_one_card_whatever_is_there_and_no_connection(
    owner, other_host, worker_env, set_up
):
    """With one answer for every host:port outside the allowlist, the worker is no port scanner."""
    other_host.reset()
    base_url = {
        "an open port": other_host.url,
        "a path that is not found": f"{other_host.url}/no/such/path",
        "a closed port": f"http://127.0.0.2:{closed_port()}",
        "a wrong key": other_host.url,
    }[set_up]
    target = ProviderTarget.objects.create(
        name="Look-alike",
        kind="anthropic",
        model="m",
        base_url=base_url,
        api_key_env="ANTHROPIC_API_KEY",
    )

    generation = run(owner, target, "/auth hello" if set_up == "a wrong key" else "hello")

    assert (generation.error_code, generation.error_message) == (
        "provider_not_configured",
        wording.target_not_allowed("Look-alike"),
    )
    assert other_host.requests() == []


def test_the_target_key_is_the_only_credential_the_worker_sends(owner, mock_provider, worker_env):
    target = ProviderTarget.objects.create(
        name="Claude",
        kind="anthropic",
        model="m",
        base_url=mock_provider.url,
        api_key_env="ANTHROPIC_API_KEY",
    )

    generation = run(owner, target)

    assert generation.state == "succeeded"
    [request] = mock_provider.requests()
    assert (
        request["headers"]["authorization"]
        == f"Bearer {MockProvider.fingerprint(FAKE_ANTHROPIC_KEY)}"
    )
    sent = sent_headers(mock_provider)
    for secret in [*WORKER_SECRETS.values(), os.environ["DATABASE_URL"], os.environ["REDIS_URL"]]:
        assert secret not in sent and MockProvider.fingerprint(secret) not in sent


@pytest.mark.parametrize(
    "set_up", ["a missing key", "a path that is not found", "a wrong key", "a closed port"]
)
def test_a_config_error_card_names_no_variable_host_port_or_path(
    owner, mock_provider, worker_env, monkeypatch, retry_settings, set_up
):
    retry_settings(max_attempts=0)
    port = closed_port()
    base_url = {
        "a missing key": mock_provider.url,
        "a path that is not found": f"{mock_provider.url}/no/such/path",
        "a wrong key": mock_provider.url,
        "a closed port": f"http://127.0.0.1:{port}",
    }[set_up]
    if set_up == "a missing key":
        monkeypatch.delenv("ANTHROPIC_API_KEY")
    target = ProviderTarget.objects.create(
        name="Claude",
        kind="anthropic",
        model="m",
        base_url=base_url,
        api_key_env="ANTHROPIC_API_KEY",
    )

    generation = run(owner, target, "/auth hello" if set_up == "a wrong key" else "hello")

    assert generation.state == "failed"
    shown = card(generation)
    mock_port = mock_provider.url.rsplit(":", 1)[1]
    for detail in ["ANTHROPIC_API_KEY", "127.0.0.1", mock_port, str(port), "/no/such/path"]:
        assert detail not in shown, (detail, shown)
    if set_up != "a closed port":  # a closed port reads as the network being down
        assert "Ask an operator to check this target" in shown


def test_each_session_on_the_mock_target_is_its_own_mock_conversation(
    owner, stranger, mock_provider, retry_settings
):
    # The README's example, tried by two people at once: each sees its own first failure.
    retry_settings(max_attempts=0)
    target = ProviderTarget.objects.create(name="Mock", kind="mock", base_url=mock_provider.url)

    first = run(owner, target, "[[mock:overloaded:1]] hi")
    second = run(stranger, target, "[[mock:overloaded:1]] hi")

    assert (first.state, second.state) == ("failed", "failed")
    by_conversation = {r["conversation"]: r["path"] for r in mock_provider.requests()}
    assert by_conversation == {
        f"session-{chat}": f"/conversations/session-{chat}/v1/messages"
        for chat in (first.session_id, second.session_id)
    }


def test_a_real_provider_url_is_used_as_the_operator_wrote_it(owner, mock_provider, worker_env):
    target = ProviderTarget.objects.create(
        name="Claude",
        kind="anthropic",
        model="m",
        base_url=mock_provider.url,
        api_key_env="ANTHROPIC_API_KEY",
    )

    run(owner, target)

    [request] = mock_provider.requests()
    assert request["path"] == "/v1/messages"
    assert request["conversation"].startswith("anthropic-")  # keyed by content: no session id
