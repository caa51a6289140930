"""Fixtures for the platform core: API clients for the shared owner and stranger."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.api_auth import api_token_create


def _api_client(user) -> Client:
    return Client(headers={"authorization": f"Bearer {api_token_create(user=user)}"})


@pytest.fixture
def owner_api(owner) -> Client:
    return _api_client(owner)


@pytest.fixture
def stranger_api(stranger) -> Client:
    return _api_client(stranger)
