"""Fixtures every integration test may use: the mock provider server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
