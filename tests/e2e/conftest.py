"""The real stack for browser tests: a dedicated Postgres database, the mock provider, a Celery
worker and Daphne, each a subprocess on a free port, plus Debian's Chromium through Playwright.

Everything is started from the specs in devtools/processes.py and stopped by its own process
group. A stack costs about a minute to start on a busy 2-core machine, so consecutive modules that
ask for the same settings (stack_settings and the environment) share one: at most one stack runs at
a time, modules are ordered so that those on the default stack run together, and a stack stops as
soon as the next test does not need it (or needs other settings). Process output goes to
/tmp/kandev-e2e-*.log for post-mortems.
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
import redis
from django.conf import settings

from devtools import processes
from devtools.browser import CHROMIUM, CHROMIUM_ARGS
from devtools.testbed import ROOT, database_drop, database_migrated, free_port
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


@dataclass(frozen=True, slots=True)
class AcpPlaces:
    """Where agents' projects, workspaces and the mock agent's counters live: one set for the
    whole run, so every module whose stack_settings are built from it shares one stack. Tests
    keep apart by name: each workspace is session-<id>, each project a name of the test's own."""

    projects: Path
    work: Path
    mock_state: Path

    @property
    def stack_settings(self) -> dict[str, str]:
        return {
            "KANDEV_PROJECT_ROOTS": str(self.projects),
            "KANDEV_ACP_WORKDIR": str(self.work),
            "KANDEV_MOCK_ACP_STATE": str(self.mock_state),
        }


@pytest.fixture(scope="session")
def acp_places(tmp_path_factory) -> AcpPlaces:
    base = tmp_path_factory.mktemp("acp-places")
    (base / "projects").mkdir()
    return AcpPlaces(projects=base / "projects", work=base / "work", mock_state=base / "state.json")


StackKey = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


def stack_key(stack_settings: dict[str, str]) -> StackKey:
    """What a stack was started with: its settings and the environment its processes inherit
    (modules set ACP directories there). pytest's own variables name the running test only."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return tuple(sorted(stack_settings.items())), tuple(sorted(environment.items()))


class StackPool:
    """At most one running stack, kept for the next module that asks for the same settings. One
    at a time: stacks share the Celery queue, channel prefix and database name, and a worker left
    running would answer control pings meant for a later module's own."""

    def __init__(self) -> None:
        self._key: StackKey | None = None
        self._stack: Stack | None = None
        self._cleanup = ExitStack()

    def get(self, stack_settings: dict[str, str]) -> Stack:
        key = stack_key(stack_settings)
        if self._stack is None or key != self._key:
            self.close()
            self._stack = self._cleanup.enter_context(running_stack(stack_settings))
            self._key = key
        return self._stack

    def close(self) -> None:
        self._key, self._stack = None, None
        self._cleanup.close()


POOL = StackPool()


def prompt_caps_reset() -> None:
    """A shared stack outlives its modules: one module's prompts this minute must not count
    against the next one's (a fresh stack's setup clears them the same way). Open-socket counts
    stay: they follow live connections, which the same database still has right."""
    client = redis.Redis.from_url(settings.REDIS["client"])
    for key in client.scan_iter(match=f"{settings.KANDEV_REDIS_PREFIX}:caps:*"):
        client.delete(key)


@pytest.fixture(scope="module")
def stack(stack_settings) -> Stack:
    started = POOL.get(stack_settings)
    prompt_caps_reset()
    return started


@contextmanager
def running_stack(stack_settings: dict[str, str] | None = None) -> Iterator[Stack]:
    """The whole stack, up and warmed; also what scripts/screenshots.py photographs."""
    base_db = env_str("DATABASE_URL")  # the environment, or what `make run` wrote for its services
    db_name = os.environ.get("KANDEV_TEST_DB_NAME", "test_kandev") + "_e2e"
    mock_port, web_port = free_port(), free_port()
    queue = os.environ.get("KANDEV_CELERY_QUEUE", "kandev") + "_e2e"
    env = {
        **os.environ,
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
        env["DATABASE_URL"] = database_migrated(base_db, db_name, env)
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


def on_default_stack(item: pytest.Item) -> bool:
    """Whether the item's module takes the default stack: it uses one, gives it no settings of
    its own and has no autouse fixture of its own (those set the stack's environment)."""
    if "stack" not in getattr(item, "fixturenames", ()):
        return False
    module = getattr(item, "module", None)
    for name, value in vars(module).items():
        marker = getattr(value, "_fixture_function_marker", None)
        if marker is not None and (name == "stack_settings" or marker.autouse):
            return False
    return True


def stack_group(item: pytest.Item) -> int:
    """Where the item runs: tests outside tests/e2e first, then the default stack's modules, then
    those on the acp_places stack, then the rest in their own order. Playwright's sync API keeps an
    event loop running in the main thread while its browser lives (the whole session once started),
    and Django refuses database work under a running loop (SynchronousOnlyOperation): a database
    test that ran after the first browser test failed in django_db_setup."""
    if "tests/e2e/" not in item.nodeid:
        return -1
    if on_default_stack(item):
        return 0
    return 1 if "acp_places" in getattr(item, "fixturenames", ()) else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules that share a stack run together, so they start it once (stack_group). A module's
    first browser test may also start its stack (migrate, Daphne, a worker, a warm-up prompt): on
    a busy 2-core machine that alone can take most of pytest.ini's 120 s."""
    items.sort(key=stack_group)
    for item in items:
        if item.get_closest_marker("timeout") is None and "tests/e2e/" in item.nodeid:
            item.add_marker(pytest.mark.timeout(300))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the item's own fixtures are gone: stop the stack unless the next test uses one, so
    no stack (and no worker answering pings) outlives the tests that need it."""
    try:
        return (yield)
    finally:
        if nextitem is None or "stack" not in getattr(nextitem, "fixturenames", ()):
            POOL.close()


def pytest_sessionfinish() -> None:
    POOL.close()
