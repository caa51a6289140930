"""The agent registry: how each ACP agent kind is launched.

An ACP target names one of these kinds (``ProviderTarget.agent_kind``); nothing the web or the API
sends is ever a command line. A launcher is a pure function of what the target configured (key,
base URL, model) and the session's private home: it returns the command, the environment and
the config files to write there, and nothing else of the worker's reaches the agent.

Every launcher turns the agent's own retries off, so that our one budget per turn owns every
retry: the banner shows from the first failure, the provider sees at most 1 + max-retries
requests for a turn, and an agent never replays partial text on its own. It also turns telemetry,
error reporting and auto-update off: an agent run by a worker talks to its provider and nothing
else. Facts behind each setting: ../shared/reference/real-agents.md.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from sessions_app.models import ProviderTarget
from sessions_app.target_rules import AGENT_DEFAULT_BASE_URLS

Kind = ProviderTarget.AgentKind


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """What a launcher may use: the target's own settings and the session's private home."""

    # Private to the session, as the agent sees it (inside its sandbox, sandbox.SEEN_HOME);
    # HOME and every config directory live under it.
    home: Path
    key: str = field(repr=False)
    base_url: str  # "" means the agent's own default endpoint
    model: str  # "" means the kind's default model
    # Which session this is, for an agent that keeps state across attempts (our mock agent's
    # prompt counters); never a path.
    conversation: str = ""


@dataclass(frozen=True, slots=True)
class AgentLaunch:
    command: tuple[str, ...]
    env: Mapping[str, str] = field(repr=False)  # holds the key: never log it
    files: Mapping[Path, str] = field(default_factory=dict, repr=False)  # written before launch
    # What the agent runs on, bound read-only into its sandbox at the same path.
    runtime: tuple[Path, ...] = ()
    # Files outside its home it may write, bound read-write at the same path (our mock agent's
    # counters only; a real agent has none).
    writable_files: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentSpec:
    kind: str
    label: str
    default_model: str
    launch: Callable[[LaunchRequest], AgentLaunch]
    # The agent can run with no key of ours at all (the mock agent needs none).
    needs_key: bool = True


def _base_env(home: Path) -> dict[str, str]:
    # HOME and TMPDIR private: agents write caches, session logs and crash reports there.
    return {
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "PATH": settings.KANDEV_AGENT_PATH,
        **settings.KANDEV_ACP_INHERITED_ENV,
    }


def _package(*parts: str) -> str:
    return str(Path(settings.KANDEV_AGENT_PACKAGES, *parts))


def _node_runtime() -> tuple[Path, ...]:
    """The agent CLIs' packages, and Node.js itself when it is not the system's (under /usr)."""
    node = Path(settings.KANDEV_AGENT_NODE).resolve()
    extra = () if node.is_relative_to("/usr") else (node.parent.parent,)
    return (Path(settings.KANDEV_AGENT_PACKAGES).resolve(), *extra)


def _claude(request: LaunchRequest) -> AgentLaunch:
    env = _base_env(request.home)
    env.update(
        {
            "CLAUDE_CONFIG_DIR": str(request.home / ".claude"),
            "ANTHROPIC_API_KEY": request.key,
            "ANTHROPIC_MODEL": request.model or CLAUDE_MODEL,
            # Our budget owns retries: one request per attempt, and no hidden non-streaming
            # re-request after a stream failed (it would show the answer again after the
            # partial one).
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    )
    if request.base_url:
        env["ANTHROPIC_BASE_URL"] = request.base_url
    command = (
        settings.KANDEV_AGENT_NODE,
        _package("@zed-industries", "claude-agent-acp", "dist", "index.js"),
    )
    return AgentLaunch(command=command, env=env, runtime=_node_runtime())


CODEX_PROVIDER = "kandev"
CODEX_DEFAULT_BASE_URL = AGENT_DEFAULT_BASE_URLS[ProviderTarget.AgentKind.CODEX]


def _toml_string(value: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes.
    return json.dumps(value)


def codex_config(*, model: str, base_url: str) -> str:
    """CODEX_HOME/config.toml: one provider of ours, on the Responses wire, retries off."""
    return "\n".join(
        (
            f"model = {_toml_string(model)}",
            f"model_provider = {_toml_string(CODEX_PROVIDER)}",
            "check_for_update_on_startup = false",
            # Ask before every command that is not a plain read, and every edit: each request
            # reaches the app (and, until a person can be asked, is refused by its policy).
            'approval_policy = "untrusted"',
            "",
            "[analytics]",
            "enabled = false",
            "",
            f"[model_providers.{CODEX_PROVIDER}]",
            f"name = {_toml_string(CODEX_PROVIDER)}",
            f"base_url = {_toml_string(base_url or CODEX_DEFAULT_BASE_URL)}",
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
            # Without these codex makes 5 HTTP attempts times 6 stream attempts per prompt and
            # re-sends the partial answer on each stream retry with no boundary frame.
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "",
        )
    )


def _codex_binary() -> str:
    # The platform binary ships as an npm optional dependency; run it directly rather than
    # through its node wrapper, so the agent is one process we can stop.
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform, sys.platform)
    return _package("@zed-industries", f"codex-acp-{system}-{machine}", "bin", "codex-acp")


def _codex(request: LaunchRequest) -> AgentLaunch:
    codex_home = request.home / ".codex"
    env = _base_env(request.home)
    env.update({"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": request.key})
    config = codex_config(model=request.model or CODEX_MODEL, base_url=request.base_url)
    return AgentLaunch(
        command=(_codex_binary(),),
        env=env,
        files={codex_home / "config.toml": config},
        runtime=_node_runtime(),
    )


def gemini_settings(*, model: str) -> dict:
    """~/.gemini/settings.json: one attempt per request, no telemetry, no updates, one model."""
    return {
        # maxAttempts 1: Gemini CLI otherwise makes up to 10 attempts over ~200 s, silently.
        "general": {
            "maxAttempts": 1,
            "retryFetchErrors": False,
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
        },
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
        # A fixed model: without it an auto-router sends extra generateContent calls.
        "model": {"name": model},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }


def _gemini(request: LaunchRequest) -> AgentLaunch:
    env = _base_env(request.home)
    env.update(
        {
            "GEMINI_API_KEY": request.key,
            # It would re-exec itself with a larger heap: one process is enough and easier to stop.
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
    )
    if request.base_url:
        env["GOOGLE_GEMINI_BASE_URL"] = request.base_url
    settings_json = json.dumps(gemini_settings(model=request.model or GEMINI_MODEL), indent=2)
    command = (
        settings.KANDEV_AGENT_NODE,
        _package("@google", "gemini-cli", "bundle", "gemini.js"),
        "--acp",
    )
    return AgentLaunch(
        command=command,
        env=env,
        files={request.home / ".gemini" / "settings.json": settings_json},
        runtime=_node_runtime(),
    )


MOCK_STATE_ENV = "KANDEV_MOCK_ACP_STATE"
MOCK_RECORD_ENV = "KANDEV_MOCK_ACP_RECORD"


def _mock(request: LaunchRequest) -> AgentLaunch:
    env = _base_env(request.home)
    # Appended, never prepended: an agent's own modules always win over ours.
    env["PYTHONPATH"] = ":".join(
        part for part in (env.get("PYTHONPATH", ""), str(settings.BASE_DIR)) if part
    )
    # Its prompt counters must outlive each attempt's process (and its private /tmp): in the
    # session's own home unless a test names files of its own, which are bound in.
    env.setdefault(MOCK_STATE_ENV, str(request.home / ".mock-agent-state.json"))
    named = (Path(env[name]) for name in (MOCK_STATE_ENV, MOCK_RECORD_ENV) if env.get(name))
    counters = tuple(path for path in named if not path.is_relative_to(request.home))
    command: tuple[str, ...] = (sys.executable, "-m", "recovery.mock.acp_agent")
    if request.model:
        command += ("--model", request.model)
    if request.conversation:
        command += ("--conversation", request.conversation)
    return AgentLaunch(command=command, env=env, runtime=mock_runtime(), writable_files=counters)


def mock_runtime() -> tuple[Path, ...]:
    """What our Python mock agents run on: Python and our own recovery package, never the rest
    of the checkout."""
    python = sorted({Path(sys.prefix), Path(sys.base_prefix)})
    return (*python, Path(settings.BASE_DIR, "recovery"))


CLAUDE_MODEL = "claude-sonnet-4-6"
CODEX_MODEL = "gpt-5.4"
GEMINI_MODEL = "gemini-2.5-pro"

AGENTS: Mapping[str, AgentSpec] = {
    spec.kind: spec
    for spec in (
        AgentSpec(Kind.MOCK, "Mock ACP agent", "mock-sonnet", _mock, needs_key=False),
        AgentSpec(Kind.CLAUDE, "Claude Code", CLAUDE_MODEL, _claude),
        AgentSpec(Kind.CODEX, "Codex", CODEX_MODEL, _codex),
        AgentSpec(Kind.GEMINI, "Gemini CLI", GEMINI_MODEL, _gemini),
    )
}


def agent_spec(kind: str) -> AgentSpec | None:
    return AGENTS.get(kind)
