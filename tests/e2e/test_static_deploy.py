"""A deploy that changes live.js, in a real Chromium against Daphne serving collected static files
as in production (WhiteNoise, the manifest's hashed names): the changed script gets a new URL,
and a browser that had yesterday's page and script cached loads today's script after the deploy,
never the stale one.

Yesterday's and today's builds are collected from two copies of the static directory taken when
the test starts, today's with a line added to js/live.js, whatever live.js holds. Daphne is
stopped and started again on the same port, so the browser's cache is the same origin's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from devtools import processes
from devtools.testbed import ROOT, database_drop, database_migrated, free_port
from kandev_web.env import env_str
from tests.e2e.conftest import DESKTOP, LOG_DIR, SETUP_CODE, Stack, logged_in_page

pytestmark = pytest.mark.browser

LIVE_JS = "js/live.js"
UNCHANGED = "css/app.css"
# Script URLs the page fetched, in the order it fetched them (the resource timing entries).
LOADED_SCRIPTS = """() => performance.getEntriesByType("resource")
    .filter((entry) => entry.initiatorType === "script")
    .map((entry) => new URL(entry.name).pathname)"""


@dataclass(frozen=True, slots=True)
class Build:
    """One deploy's collected static files."""

    root: Path

    def name(self, source: str) -> str:
        """The hashed name the manifest gives ``source``."""
        return json.loads((self.root / "staticfiles.json").read_text())["paths"][source]

    def url(self, source: str) -> str:
        return settings.STATIC_URL + self.name(source)


def build_collected(sources: Path, root: Path) -> Build:
    with override_settings(STATICFILES_DIRS=[sources], STATIC_ROOT=root):
        call_command("collectstatic", interactive=False, verbosity=0)
    return Build(root)


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> tuple[Build, Build]:
    base = tmp_path_factory.mktemp("deploys")
    yesterday_sources, today_sources = base / "yesterday-src", base / "today-src"
    shutil.copytree(settings.STATICFILES_DIRS[0], yesterday_sources)
    shutil.copytree(yesterday_sources, today_sources)
    with (today_sources / LIVE_JS).open("a") as script:
        script.write("\n// Deployed again: today's live.js differs from yesterday's.\n")
    return (
        build_collected(yesterday_sources, base / "yesterday"),
        build_collected(today_sources, base / "today"),
    )


class Site:
    """The app on one loopback port, served by one Daphne at a time."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"

    @contextmanager
    def serving(self, build: Build) -> Iterator[None]:
        spec = processes.web(port=self.port)
        log_path = LOG_DIR / "kandev-e2e-static-daphne.log"
        process = processes.start(
            spec, env={**self.env, "KANDEV_STATIC_ROOT": str(build.root)}, log_path=log_path
        )
        try:
            processes.wait_ready(spec, process, log_path=log_path, timeout_s=60)
            yield
        finally:
            processes.stop(process)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    base_db = env_str("DATABASE_URL")
    db_name = os.environ.get("KANDEV_TEST_DB_NAME", "test_kandev") + "_e2e_static"
    env = {
        **os.environ,
        "KANDEV_CHANNEL_PREFIX": os.environ.get("KANDEV_CHANNEL_PREFIX", "kandev") + "_e2e",
        "DEBUG": "false",
    }
    try:
        env["DATABASE_URL"] = database_migrated(base_db, db_name, env)
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", SETUP_CODE],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=180,
        )
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        yield Site(env)
    finally:
        database_drop(base_db, db_name)


def test_a_changed_live_js_gets_a_new_url_and_an_unchanged_file_keeps_its_own(builds):
    yesterday, today = builds

    assert yesterday.url(LIVE_JS) != today.url(LIVE_JS)
    assert yesterday.url(UNCHANGED) == today.url(UNCHANGED)


def test_after_a_deploy_the_page_loads_the_new_live_js_and_never_the_stale_one(
    browser, builds, site, request
):
    yesterday, today = builds
    with site.serving(yesterday):
        page = logged_in_page(browser, Stack(base_url=site.base_url, env=site.env), **DESKTOP)
        request.addfinalizer(page.context.close)
        board = page.goto("/")
        stale = page.request.get(yesterday.url(LIVE_JS))

        # Yesterday: the page is never stored, its script is kept for good under its hashed name.
        assert board.headers["cache-control"] == "no-store"
        assert page.evaluate(LOADED_SCRIPTS).count(yesterday.url(LIVE_JS)) == 1
        assert stale.status == 200
        assert stale.headers["cache-control"] == "max-age=315360000, public, immutable"

    with site.serving(today):
        fetched: list[str] = []
        page.on("request", lambda request: fetched.append(request.url))
        answer = page.reload()

        script = page.get_attribute('script[src*="/js/live."]', "src")
        loaded = page.evaluate(LOADED_SCRIPTS)
        assert answer.headers["cache-control"] == "no-store"
        assert script == today.url(LIVE_JS)
        assert today.url(LIVE_JS) in loaded and yesterday.url(LIVE_JS) not in loaded
        assert site.base_url + today.url(LIVE_JS) in fetched
        assert not [url for url in fetched if url.endswith(yesterday.url(LIVE_JS))]
        # The script that ran is today's file, as today's build holds it.
        body = page.request.get(today.url(LIVE_JS)).body()
        assert body == (today.root / today.name(LIVE_JS)).read_bytes()
        assert b"Deployed again" in body
