"""Turn a ProviderTarget row into what a run needs: the wire layer's TargetConfig for a direct
provider, an AcpTargetConfig (command line, working directory, environment) for an ACP agent.

The key lives only in the worker's environment, named by ``api_key_env``; it is read for each run
and never stored, logged or put in an error message. A direct target is checked against the
operator's allowlists (sessions_app.target_rules) before anything is read or sent: a refused
target gets one neutral card, and the reason goes to the worker's log for staff.
"""

from __future__ import annotations

import logging
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
from sessions_app.target_rules import base_url_effective, target_problems

logger = logging.getLogger(__name__)

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
    """What one run of a direct (or mock) target sends: its allowed URL and its allowed key.

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
    return TargetConfig(
        provider_id=str(target.kind),
        base_url=base_url_effective(kind=target.kind, base_url=target.base_url),
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
                detail=wording.target_key_missing(target.name),
            )
        env[target.api_key_env] = key
    return AcpTargetConfig(command=command, cwd=str(_workdir(session_id)), env=env)


def _workdir(session_id: int) -> Path:
    # Each session gets its own directory, so an agent that writes files never sees another's.
    path = Path(settings.KANDEV_ACP_WORKDIR) / f"session-{session_id}"
    path.mkdir(parents=True, exist_ok=True)
    return path
