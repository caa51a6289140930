"""Turn a ProviderTarget row into what a run needs: the wire layer's TargetConfig for a direct
provider, an AcpTargetConfig (command line, working directory, environment) for an ACP agent.

The key lives only in the worker's environment, named by ``api_key_env``; it is read for each run
and never stored, logged or put in an error message.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from recovery import wording
from recovery.providers.acp import PermissionPolicy
from recovery.providers.base import TargetConfig
from recovery.taxonomy import Evidence, Kind, Phase, ProviderFailure, Source
from sessions_app.models import ProviderTarget

# The mock server wants an auth header like a real provider but accepts any value.
MOCK_PLACEHOLDER_KEY = "mock-key-not-secret"


class TargetUnusable(ProviderFailure):
    """The target can't be called at all (no key, unsupported kind). ``code`` says which."""

    def __init__(self, *, code: str, detail: str) -> None:
        super().__init__(
            Evidence(source=Source.HTTP, phase=Phase.AUTH, kind=Kind.AUTH, excerpt=detail), detail
        )
        self.code = code


def target_config_for(
    target: ProviderTarget, *, environ: Mapping[str, str] = os.environ
) -> TargetConfig:
    if target.kind == ProviderTarget.Kind.ACP:
        raise TargetUnusable(
            code="provider_not_configured",
            detail=wording.target_is_agent(target.name),
        )
    api_key = environ.get(target.api_key_env, "") if target.api_key_env else ""
    if target.kind == ProviderTarget.Kind.MOCK and not target.api_key_env:
        api_key = MOCK_PLACEHOLDER_KEY
    if not api_key:
        detail = (
            wording.target_key_missing(target.name, target.api_key_env)
            if target.api_key_env
            else wording.target_key_unnamed(target.name)
        )
        raise TargetUnusable(code="missing_credentials", detail=detail)
    base_url = target.base_url
    if target.kind == ProviderTarget.Kind.MOCK and not base_url:
        base_url = settings.KANDEV_MOCK_PROVIDER_URL
    return TargetConfig(
        provider_id=str(target.kind),
        base_url=base_url,
        model=target.model or "mock-model",
        api_key=api_key,
        name=target.name,
    )


@dataclass(frozen=True, slots=True)
class AcpTargetConfig:
    command: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = field(repr=False)  # may hold the agent's key: never log it
    permission_policy: PermissionPolicy = PermissionPolicy.ALLOW_READ_ONLY


def acp_config_for(
    target: ProviderTarget, *, session_id: int, environ: Mapping[str, str] = os.environ
) -> AcpTargetConfig:
    """The agent's command line (split shell-style), a working directory of the session's own and
    the environment settings.KANDEV_ACP_INHERITED_ENV allows, plus the target's key looked up by
    name in ``environ``. Raises TargetUnusable for a missing or unparsable command, or a key
    variable that is named but not set."""
    try:
        command = tuple(shlex.split(target.command))
    except ValueError:
        command = ()
    if not command:
        raise TargetUnusable(
            code="provider_not_configured",
            detail=wording.target_no_command(target.name),
        )
    env = dict(settings.KANDEV_ACP_INHERITED_ENV)
    # Appended, never prepended: an agent's own modules always win over ours.
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (env.get("PYTHONPATH", ""), str(settings.BASE_DIR)) if part
    )
    if target.api_key_env:
        key = environ.get(target.api_key_env, "")
        if not key:
            raise TargetUnusable(
                code="missing_credentials",
                detail=wording.target_key_missing(target.name, target.api_key_env),
            )
        env[target.api_key_env] = key
    return AcpTargetConfig(command=command, cwd=str(_workdir(session_id)), env=env)


def _workdir(session_id: int) -> Path:
    # Each session gets its own directory, so an agent that writes files never sees another's.
    path = Path(settings.KANDEV_ACP_WORKDIR) / f"session-{session_id}"
    path.mkdir(parents=True, exist_ok=True)
    return path
