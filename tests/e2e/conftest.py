"""The real stack for browser tests: a dedicated Postgres database, the mock provider, a Celery
worker and Daphne, each a subprocess on a free port, plus Debian's Chromium through Playwright.

Everything is started once per test module from the specs in devtools/processes.py and stopped by
its own process group at the end. Process output goes to /tmp/kandev-e2e-*.log for post-mortems.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools import processes
from devtools.browser import CHROMIUM, CHROMIUM_ARGS
from devtools.testbed import ROOT, database_create, database_drop, free_port
from kandev_web.env import env_str
from tests.integration.web.processes import celery_worker

USERNAME, PASSWORD = "viewer", "viewer-pass-123"
LOG_DIR = Path(os.environ.get("KANDEV_E2E_LOG_DIR", "/tmp"))  # one per helper on a shared machine


@dataclass(frozen=True, slots=True)
class Stack:
    base_url: str
    env: dict[str, str]

    @property
    def mock_url(self) -> str:
        return self.env["KANDEV_MOCK_PROVIDER_URL"]

    @property
    def database_url(self) -> str:
        return self.env["DATABASE_URL"]

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return result.stdout

    def new_session(self, title: str) -> int:
        """A fresh session (so scenarios never share a conversation) owned by the viewer."""
        code = (
            "from django.contrib.auth import get_user_model\n"
            "from sessions_app.models import ProviderTarget\n"
            "from sessions_app.services import session_create\n"
            f"user = get_user_model().objects.get(username={USERNAME!r})\n"
            "target = ProviderTarget.objects.get(name='Mock')\n"
            f"print(session_create(owner=user, target=target, title={title!r}).pk)\n"
        )
        return int(self.manage("shell", "-c", code).strip().splitlines()[-1])


# One prompt through the whole pipeline before any browser looks: the worker's first run pays for
# importing the provider SDKs, which on a busy 2-core machine can take longer than a UI wait.
WARM_UP_CODE = f"""
from django.contrib.auth import get_user_model
from devtools.eventually import eventually
from sessions_app.models import PromptGeneration, ProviderTarget
from sessions_app.services import prompt_submit, session_create
user = get_user_model().objects.get(username={USERNAME!r})
target = ProviderTarget.objects.get(name="Mock")
session = session_create(owner=user, target=target, title="Warm-up")
generation = prompt_submit(session=session, user=user, text="warm up")
def state():
    generation.refresh_from_db()
    return generation.state
eventually(state, until=lambda now: now not in PromptGeneration.ACTIVE_STATES, timeout=120,
           interval=0.2, what="the warm-up prompt to end")
assert generation.state == PromptGeneration.State.SUCCEEDED, generation.state
"""

SETUP_CODE = f"""
import redis
from django.conf import settings
from django.contrib.auth import get_user_model
# A fresh database gives the same user ids again: per-person counts in Redis from an earlier
# stack (prompts this minute, open sockets) would count against this one's people.
client = redis.Redis.from_url(settings.REDIS["client"])
for kind in ("caps", "sockets"):
    for key in client.scan_iter(match=f"{{settings.KANDEV_REDIS_PREFIX}}:{{kind}}:*"):
        client.delete(key)
from sessions_app.models import ProviderTarget
from sessions_app.services import target_create
get_user_model().objects.create_user({USERNAME!r}, password={PASSWORD!r})
target_create(name="Mock", kind=ProviderTarget.Kind.MOCK, model="mock-1")
"""


@pytest.fixture(scope="module")
def stack_settings() -> dict[str, str]:
    """Settings a test module gives its whole stack (override it in the module)."""
    return {}


# Module scope: the stack (and its Celery worker, which answers every control ping on this Redis)
# is gone before other test modules run, e.g. /healthz's "no worker answers" test.
@pytest.fixture(scope="module")
def stack(stack_settings) -> Iterator[Stack]:
    with running_stack(stack_settings) as started:
        yield started


@contextmanager
def running_stack(stack_settings: dict[str, str] | None = None) -> Iterator[Stack]:
    """The whole stack, up and warmed; also what scripts/screenshots.py photographs."""
    base_db = env_str("DATABASE_URL")  # the environment, or what `make run` wrote for its services
    db_name = os.environ.get("KANDEV_TEST_DB_NAME", "test_kandev") + "_e2e"
    mock_port, web_port = free_port(), free_port()
    queue = os.environ.get("KANDEV_CELERY_QUEUE", "kandev") + "_e2e"
    env = {
        **os.environ,
        "DATABASE_URL": database_create(base_db, db_name),
        "KANDEV_MOCK_PROVIDER_URL": f"http://127.0.0.1:{mock_port}",
        "KANDEV_CELERY_QUEUE": queue,
        "KANDEV_CHANNEL_PREFIX": os.environ.get("KANDEV_CHANNEL_PREFIX", "kandev") + "_e2e",
        "DEBUG": "false",
        # The retry ladder at test speed: one-second waits without jitter, so banner tests see
        # every attempt in seconds; Retry-After (a floor) still shows through when it is longer.
        "KANDEV_RETRY_DELAYS": "1",
        "KANDEV_RETRY_JITTER": "0",
        "KANDEV_RETRY_MAX_ATTEMPTS": "5",
        # Each test here is about one session's own ladder, and one-second waits make five
        # failures in 30 s routine: the shared circuit (tests/integration/ladder/
        # test_shared_health.py) would carry one test's overloads into the next one's banner.
        "KANDEV_CIRCUIT_ENABLED": "false",
        **(stack_settings or {}),
    }
    with ExitStack() as cleanup:
        cleanup.callback(database_drop, base_db, db_name)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=180,
        )
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", SETUP_CODE],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=120,
        )
        LOG_DIR.mkdir(parents=True, exist_ok=True)  # a KANDEV_E2E_LOG_DIR not made yet
        # Started together, then waited for: the mock is up long before Daphne.
        servers = [
            (processes.mock(port=mock_port), LOG_DIR / "kandev-e2e-mock.log"),
            (processes.web(port=web_port), LOG_DIR / "kandev-e2e-daphne.log"),
        ]
        started = []
        for spec, log_path in servers:
            process = processes.start(spec, env=env, log_path=log_path)
            cleanup.callback(processes.stop, process)
            started.append((spec, process, log_path))
        for spec, process, log_path in started:
            processes.wait_ready(spec, process, log_path=log_path, timeout_s=60)
        # The worker needs the same settings as Daphne; celery_worker() waits for its ping.
        with celery_worker(
            queue=queue, env=env, log_path=LOG_DIR / "kandev-e2e-worker.log", pool="threads"
        ):
            subprocess.run(
                [sys.executable, "manage.py", "shell", "-c", WARM_UP_CODE],
                cwd=ROOT,
                env=env,
                check=True,
                timeout=150,
            )
            yield Stack(base_url=f"http://127.0.0.1:{web_port}", env=env)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 2,
}


def logged_in_page(browser, stack: Stack, **context_options):
    context = browser.new_context(base_url=stack.base_url, **context_options)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("input[name=username]", USERNAME)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{stack.base_url}/")
    return page


@pytest.fixture
def desktop(browser, stack):
    page = logged_in_page(browser, stack, **DESKTOP)
    yield page
    page.context.close()


@pytest.fixture
def phone(browser, stack):
    page = logged_in_page(browser, stack, **PHONE)
    yield page
    page.context.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A module's first browser test also starts its stack (migrate, Daphne, a worker, a warm-up
    prompt): on a busy 2-core machine that alone can take most of pytest.ini's 120 s."""
    for item in items:
        if item.get_closest_marker("timeout") is None and "tests/e2e/" in item.nodeid:
            item.add_marker(pytest.mark.timeout(300))
