"""Turn a ProviderTarget row into what a run needs: the wire layer's TargetConfig for a direct
provider, an AcpTargetConfig (the registry's launch of its agent kind) for an ACP agent.

The key lives only in the worker's environment, named by ``api_key_env``; it is read for each run
and never stored, logged or put in an error message. A target, direct or ACP, is checked against
the operator's allowlists (sessions_app.target_rules) before anything is read, sent or started: a
refused target gets one neutral card, and the reason goes to the worker's log for staff.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings

from recovery import wording
from recovery.providers.acp import PermissionPolicy
from recovery.providers.acp.egress import EgressRoute
from recovery.providers.base import StreamTimeouts, TargetConfig
from recovery.taxonomy import Evidence, Kind, Phase, ProviderFailure, Source
from sessions_app.agent.registry import LaunchRequest, agent_spec
from sessions_app.agent.sandbox import (
    SEEN_HOME,
    SEEN_WORKSPACE,
    SandboxPlan,
    SandboxUnavailable,
    endpoint_of,
    sandbox_command,
    sandbox_enabled,
    sandbox_ready,
    url_as_seen,
)
from sessions_app.errors import WorkspaceUnusable
from sessions_app.models import ProviderTarget, Session
from sessions_app.target_rules import AGENT_DEFAULT_BASE_URLS, base_url_effective, target_problems
from sessions_app.workspaces.services import worktree_ensure, worktree_git_dir

logger = logging.getLogger(__name__)

# The mock server wants an auth header like a real provider but accepts any value.
MOCK_PLACEHOLDER_KEY = "mock-key-not-secret"
# recovery.mock.conversations.CONVERSATION_PREFIX, naming one session.
MOCK_CONVERSATION_PATH = "/conversations/session-{session_id}"


class TargetUnusable(ProviderFailure):
    """The target can't be called at all (no key, unsupported kind). ``code`` says which."""

    def __init__(self, *, code: str, detail: str) -> None:
        super().__init__(
            Evidence(source=Source.HTTP, phase=Phase.AUTH, kind=Kind.AUTH, excerpt=detail), detail
        )
        self.code = code


def stream_timeouts_for(target: ProviderTarget) -> StreamTimeouts:
    """The stream timeouts of the target's model calls: its own where it sets one, else the
    worker's defaults (settings.KANDEV_STREAM_TIMEOUTS)."""
    defaults = settings.KANDEV_STREAM_TIMEOUTS
    return replace(
        defaults,
        first_chunk_s=target.first_chunk_timeout_s or defaults.first_chunk_s,
        idle_s=target.idle_timeout_s or defaults.idle_s,
        no_progress_s=target.no_progress_timeout_s or defaults.no_progress_s,
    )


def target_config_for(
    target: ProviderTarget, *, session_id: int, environ: Mapping[str, str] = os.environ
) -> TargetConfig:
    """What one run of a direct (or mock) target sends for a turn of session ``session_id``: its
    allowed URL and its allowed key.

    A mock target's URL names the session as the mock's conversation (``/conversations/{id}`` in
    front of the wire's path), so its scenario counters are the session's own: two people trying
    the README's ``[[mock:overloaded:2]]`` at once never share "attempt 2". Only the mock sees
    the session id; a real provider's URL is used as the operator wrote it.

    ``environ`` is read for the key alone, by the allowed name, after the checks."""
    if target.kind == ProviderTarget.Kind.ACP:
        raise TargetUnusable(
            code="provider_not_configured",
            detail=wording.target_is_agent(target.name),
        )
    problems = target_problems(
        kind=target.kind, base_url=target.base_url, api_key_env=target.api_key_env
    )
    if problems:
        logger.warning(
            "target %r (#%s) refused: %s",
            target.name,
            target.pk,
            "; ".join(f"{p.field} {p.message}" for p in problems),
        )
        raise TargetUnusable(
            code="provider_not_configured", detail=wording.target_not_allowed(target.name)
        )
    api_key = environ.get(target.api_key_env, "") if target.api_key_env else ""
    if target.kind == ProviderTarget.Kind.MOCK and not target.api_key_env:
        api_key = MOCK_PLACEHOLDER_KEY
    if not api_key:
        if target.api_key_env:
            logger.warning(
                "target %r (#%s): %s is not set on this worker",
                target.name,
                target.pk,
                target.api_key_env,
            )
            detail = wording.target_key_missing(target.name)
        else:
            detail = wording.target_key_unnamed(target.name)
        raise TargetUnusable(code="missing_credentials", detail=detail)
    base_url = base_url_effective(kind=target.kind, base_url=target.base_url)
    if target.kind == ProviderTarget.Kind.MOCK:
        base_url = f"{base_url.rstrip('/')}{MOCK_CONVERSATION_PATH.format(session_id=session_id)}"
    return TargetConfig(
        provider_id=str(target.kind),
        base_url=base_url,
        model=target.model or "mock-model",
        api_key=api_key,
        name=target.name,
    )


@dataclass(frozen=True, slots=True)
class AcpTargetConfig:
    command: tuple[str, ...]  # the agent's, wrapped in its sandbox's when it is confined
    cwd: str  # the working directory as the agent sees it
    env: Mapping[str, str] = field(repr=False)  # may hold the agent's key: never log it
    permission_policy: PermissionPolicy = PermissionPolicy.ALLOW_READ_ONLY
    host_cwd: str | None = None  # where ``cwd`` is on this machine, when the agent is confined
    egress: tuple[EgressRoute, ...] = ()

    def launch_fields(self) -> dict:
        """What an AcpPromptSpec takes from the launch: how to start the agent, and where."""
        return {
            "command": self.command,
            "cwd": self.cwd,
            "host_cwd": self.host_cwd,
            "egress": self.egress,
            "env": self.env,
            "permission_policy": self.permission_policy,
        }


def acp_config_for(
    target: ProviderTarget, *, session_id: int, environ: Mapping[str, str] = os.environ
) -> AcpTargetConfig:
    """The launch of the target's agent kind (sessions_app.agent.registry), confined in its
    sandbox (sessions_app.agent.sandbox): its command, a working directory and a private home of
    the session's own (config files written there), and an environment holding only what the
    launcher puts in it plus the target's key, looked up by name in ``environ``. Raises
    TargetUnusable for a target without a known agent kind, a key that is needed and not set, or
    a machine where the sandbox cannot be set up."""
    spec = agent_spec(target.agent_kind)
    if spec is None:
        raise TargetUnusable(
            code="provider_not_configured", detail=wording.target_no_agent_kind(target.name)
        )
    # The same allowlists as a direct target's: the agent's key variable and the host it calls.
    _refuse_what_the_operator_disallows(target)
    key = _agent_key(target, needed=spec.needs_key, environ=environ)
    home = _private_dir(f"home-{session_id}")
    workspace, git_dir = _workspace_of(session_id)
    confined = sandbox_enabled()
    if confined:
        try:
            sandbox_ready()
        except SandboxUnavailable as unavailable:
            logger.error("agent for target %r not started: %s", target.name, unavailable.reason)
            raise TargetUnusable(
                code="sandbox_unavailable", detail=wording.AGENT_SANDBOX_UNAVAILABLE
            ) from None
    else:
        logger.warning(
            "KANDEV_AGENT_SANDBOX=off: the agent of target %r runs UNCONFINED, with the worker's "
            "view of this machine",
            target.name,
        )
    endpoint_url = target.base_url or AGENT_DEFAULT_BASE_URLS.get(target.agent_kind, "")
    endpoint = endpoint_of(endpoint_url) if endpoint_url else None
    seen_home = Path(SEEN_HOME) if confined else home
    launch = spec.launch(
        LaunchRequest(
            home=seen_home,
            key=key,
            # Named even when it is the agent's default: inside, a privileged port moves.
            base_url=url_as_seen(endpoint_url) if confined and endpoint_url else target.base_url,
            model=target.model,
            conversation=f"session-{session_id}",
        )
    )
    for path, text in launch.files.items():
        host = home / path.relative_to(seen_home)
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(text, encoding="utf-8")
        host.chmod(0o600)  # config files sit beside the key's consumers: owner only
    tmp = Path(launch.env.get("TMPDIR", ""))
    if tmp.is_relative_to(seen_home):
        (home / tmp.relative_to(seen_home)).mkdir(parents=True, exist_ok=True)
    if not confined:
        return AcpTargetConfig(
            command=launch.command,
            cwd=str(workspace),
            env=launch.env,
            permission_policy=PermissionPolicy(target.permission_policy),
        )
    missing = [str(p) for p in (Path(launch.command[0]), *launch.runtime) if not p.exists()]
    if missing:
        # Inside the sandbox this would be bwrap's own error; say what is wrong instead.
        logger.error("agent for target %r not started: missing %s", target.name, missing)
        raise TargetUnusable(
            code="provider_not_configured", detail=wording.agent_not_installed(target.name)
        )
    for path in launch.writable_files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    sandboxed = sandbox_command(
        SandboxPlan(
            workspace=workspace,
            home=home,
            runtime=launch.runtime,
            writable_files=launch.writable_files,
            endpoints=(endpoint,) if endpoint else (),
            git_dir=git_dir,
        ),
        launch.command,
    )
    return AcpTargetConfig(
        command=sandboxed.command,
        cwd=SEEN_WORKSPACE,
        env=launch.env,
        permission_policy=PermissionPolicy(target.permission_policy),
        host_cwd=str(workspace),
        egress=sandboxed.egress,
    )


def _workspace_of(session_id: int) -> tuple[Path, Path | None]:
    """Where the session's agent works: its task's worktree (made by the first turn) with the
    repository's git directory, or, for a task bound to no project, a private empty folder."""
    task_id = Session.objects.filter(pk=session_id).values_list("task_id", flat=True).first()
    try:
        worktree = worktree_ensure(task_id=task_id) if task_id is not None else None
        if worktree is None or task_id is None:
            return _private_dir(f"session-{session_id}"), None
        return worktree, worktree_git_dir(task_id=task_id)
    except WorkspaceUnusable as unusable:
        raise TargetUnusable(code=unusable.code, detail=unusable.detail) from None


def _refuse_what_the_operator_disallows(target: ProviderTarget) -> None:
    problems = target_problems(
        kind=target.kind,
        base_url=target.base_url,
        api_key_env=target.api_key_env,
        agent_kind=target.agent_kind,
    )
    if problems:
        logger.warning(
            "target %r (#%s) refused: %s",
            target.name,
            target.pk,
            "; ".join(f"{p.field} {p.message}" for p in problems),
        )
        raise TargetUnusable(
            code="provider_not_configured", detail=wording.target_not_allowed(target.name)
        )


def _agent_key(target: ProviderTarget, *, needed: bool, environ: Mapping[str, str]) -> str:
    if target.api_key_env:
        key = environ.get(target.api_key_env, "")
        if not key:
            logger.warning(
                "target %r (#%s): %s is not set on this worker",
                target.name,
                target.pk,
                target.api_key_env,
            )
            raise TargetUnusable(
                code="missing_credentials",
                detail=wording.target_key_missing(target.name),
            )
        return key
    if not needed or _is_loopback(target.base_url):
        # The mock agent needs no key and the mock provider accepts any: never a real one.
        return MOCK_PLACEHOLDER_KEY
    raise TargetUnusable(code="missing_credentials", detail=wording.target_key_unnamed(target.name))


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _private_dir(name: str) -> Path:
    # Each session gets its own directories, so an agent never sees another session's files.
    path = Path(settings.KANDEV_ACP_WORKDIR) / name
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
