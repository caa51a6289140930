"""Fixtures every integration test may use: the mock provider server, two users, the Mock target,
a session on it, a chat the mock provider answers, and the real broker queue kept empty.

Rows come from tests/support/factories.py; a directory's conftest narrows these (acp_app's chat
is one with the mock ACP agent) rather than copying them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
import redis
from django.conf import settings

from recovery.budget import RetrySettings
from recovery.mock.testing import MockProvider, running_mock_server
from sessions_app.models import ProviderTarget, Session
from tests.support.factories import ProviderTargetFactory, SessionFactory, UserFactory


@pytest.fixture(scope="session")
def _mock_server_url() -> Iterator[str]:
    with running_mock_server() as url:
        yield url


@pytest.fixture
def mock_provider(_mock_server_url: str) -> MockProvider:
    provider = MockProvider(_mock_server_url)
    provider.reset()
    return provider


@pytest.fixture
def owner(db):
    return UserFactory(username="owner")


@pytest.fixture
def stranger(db):
    return UserFactory(username="stranger")


@pytest.fixture
def target(db) -> ProviderTarget:
    """The Mock target at its configured address; nothing here runs a prompt on it."""
    return ProviderTargetFactory()


@pytest.fixture
def session(owner, target) -> Session:
    return SessionFactory(owner=owner, target=target)


@pytest.fixture
def chat(owner, mock_provider) -> Session:
    """The owner's session on a Mock target that the running mock provider answers."""
    served = ProviderTargetFactory(base_url=mock_provider.url)
    return SessionFactory(owner=owner, target=served, title="Chat")


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(settings.REDIS["client"])
    yield client
    client.close()


@pytest.fixture(autouse=True)
def fresh_shared_state(redis_client) -> Iterator[None]:
    """Provider health, metrics, the per-person socket count and rate windows are shared through
    Redis by design: each test starts with every target healthy, every counter at zero."""

    def clear() -> None:
        for kind in ("health", "metrics", "sockets", "caps"):
            for key in redis_client.scan_iter(match=f"{settings.KANDEV_REDIS_PREFIX}:{kind}:*"):
                redis_client.delete(key)

    clear()
    yield
    clear()


@pytest.fixture
def celery_queue(redis_client) -> Iterator[str]:
    """The real broker queue runs and scheduled attempts land in; emptied before and after."""
    name = settings.CELERY_TASK_DEFAULT_QUEUE
    redis_client.delete(name)
    yield name
    redis_client.delete(name)


@pytest.fixture
def retry_settings(settings):
    """Change the retry ladder's settings for one test: ``retry_settings(max_attempts=2)``."""

    def change(**fields) -> RetrySettings:
        settings.KANDEV_RETRY = dataclasses.replace(settings.KANDEV_RETRY, **fields)
        return settings.KANDEV_RETRY

    return change
