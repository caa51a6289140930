"""Daphne's static handler (kandev_web/static_files.py) serves only what collectstatic wrote: with
DEBUG off it refuses to start without a manifest, since no page could name its hashed files."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from kandev_web.static_files import StaticFilesHandler


async def no_app(scope, receive, send) -> None:
    raise AssertionError("static requests never reach the app")


def test_daphne_refuses_to_start_when_nothing_was_collected(tmp_path):
    with (
        override_settings(STATIC_ROOT=tmp_path, DEBUG=False),
        pytest.raises(ImproperlyConfigured, match="No collected static files in"),
    ):
        StaticFilesHandler(no_app)


def test_it_starts_on_collected_files_and_in_debug_without_them(tmp_path):
    StaticFilesHandler(no_app)  # the test run's own collected files

    with override_settings(STATIC_ROOT=tmp_path, DEBUG=True):
        StaticFilesHandler(no_app)
