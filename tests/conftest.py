"""Shared test set-up. Tests run against the real PostgreSQL and Redis named by DATABASE_URL and
REDIS_URL (make test starts embedded ones when neither is set)."""

import dataclasses
from collections.abc import Iterator

import pytest

from recovery.budget import RetrySettings
from recovery.mock.testing import MockProvider, running_mock_server


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
def retry_settings(settings):
    """Change the retry ladder's settings for one test: ``retry_settings(max_attempts=2)``."""

    def change(**fields) -> RetrySettings:
        settings.KANDEV_RETRY = dataclasses.replace(settings.KANDEV_RETRY, **fields)
        return settings.KANDEV_RETRY

    return change
