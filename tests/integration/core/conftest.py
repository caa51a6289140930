"""Fixtures for the platform core: users, a mock target, sessions, API clients, Redis."""

from __future__ import annotations

import pytest
import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from sessions_app.api_auth import api_token_create
from sessions_app.models import ProviderTarget
from sessions_app.services import session_create


@pytest.fixture
def alice(db):
    # No password: hashing one costs about a second per user, and the API uses tokens.
    return get_user_model().objects.create_user(username="alice")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user(username="bob")


@pytest.fixture
def mock_target(db):
    return ProviderTarget.objects.create(name="Mock", kind=ProviderTarget.Kind.MOCK, model="mock-1")


@pytest.fixture
def session(alice, mock_target):
    return session_create(owner=alice, target=mock_target, title="Plan the week")


@pytest.fixture
def redis_client():
    client = redis.Redis.from_url(settings.REDIS["client"])
    yield client
    client.close()


@pytest.fixture
def celery_queue(redis_client):
    """The real broker queue run_generation lands in; emptied before and after the test."""
    name = settings.CELERY_TASK_DEFAULT_QUEUE
    redis_client.delete(name)
    yield name
    redis_client.delete(name)


def _api_client(user) -> Client:
    return Client(headers={"authorization": f"Bearer {api_token_create(user=user)}"})


@pytest.fixture
def alice_api(alice) -> Client:
    return _api_client(alice)


@pytest.fixture
def bob_api(bob) -> Client:
    return _api_client(bob)
