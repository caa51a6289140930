"""What one ACP prompt attempt is given: the agent's command line and environment, the prompt and
the conversation before it, the permission policy and the time limits.

The spec is the whole input of an attempt: a retry builds the same spec again and starts a fresh
agent process with it, so nothing of a failed attempt's agent session carries over.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acp import text_block

from recovery.providers.acp.agent_events import Correlation
from recovery.providers.acp.egress import EgressRoute
from recovery.providers.acp.permissions import PermissionPolicy, Workspace
from recovery.redact import redact_credentials


@dataclass(frozen=True, slots=True)
class AcpPromptSpec:
    command: tuple[str, ...]
    cwd: str
    prompt: str  # as the user wrote it; credential-tier redaction is applied on every attempt
    correlation: Correlation
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold keys
    permission_policy: PermissionPolicy = PermissionPolicy.ALLOW_READ_ONLY
    prompt_timeout_s: float | None = None
    # How much time spent waiting for a person may extend the prompt timeout, in all (None: any).
    ask_budget_s: float | None = None
    cancel_grace_s: float = 5.0
    stderr_tail_bytes: int = 8 * 1024
    # The earlier conversation, sent as a leading text block: a fresh agent process remembers
    # nothing of earlier prompts. The prompt stays the final block of its own.
    context: str | None = None
    # After the prompt ends, how long the agent may take to exit on its own before its whole
    # process group is ended. Its session state is of no use to us: every attempt is a new one.
    exit_grace_s: float = 0.2
    # The working directory on this machine when ``cwd`` is its path inside a sandbox (the
    # path-aware permission policy resolves paths there); None: the agent runs unconfined.
    host_cwd: str | None = None
    # The sandbox's only way out (egress.py): one socket per endpoint its launcher allows.
    egress: tuple[EgressRoute, ...] = ()

    @property
    def workspace(self) -> Workspace:
        return Workspace(seen=self.cwd, host=self.host_cwd or self.cwd)


_SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def secret_env_values(env: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the agent's environment that name a secret (its configured key above all):
    removed from its output wherever they appear, whatever their format."""
    return tuple(value for name, value in env.items() if _SECRET_ENV_NAME.search(name) and value)


def prompt_blocks(spec: AcpPromptSpec) -> list[Any]:
    """``session/prompt``'s content: the earlier conversation (if any), then the prompt itself,
    both redacted on every attempt."""
    blocks = [text_block(redact_credentials(spec.prompt))]
    if spec.context:
        blocks.insert(0, text_block(redact_credentials(spec.context)))
    return blocks
