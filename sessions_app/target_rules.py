"""What a provider target may name, decided in one place.

Targets belong to the operator, and even an operator's target may only name a key variable from
settings.KANDEV_PROVIDER_KEY_ENVS and a base URL on a host from settings.KANDEV_PROVIDER_HOSTS.
The services check this when a target is saved (admin, `manage.py target_add`, seed_demo) and
the worker checks it again each time it uses one (agent/targets.py), so a row edited in the
database directly is refused too: nothing the worker sends can carry a value, or go to a host,
that the operator did not allow.

Problems name the variable or the host: they are for staff (the admin form, the command, the
worker's log), never for a session's card.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings

from sessions_app.models import ProviderTarget

# An environment variable *name*. Anything else (a pasted key such as "sk-ant-...") is refused, so
# a secret can never end up stored in this column by mistake.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
# What the SDKs call when a direct target leaves its base URL empty.
DEFAULT_BASE_URLS: dict[str, str] = {
    ProviderTarget.Kind.ANTHROPIC: "https://api.anthropic.com",
    ProviderTarget.Kind.OPENAI: "https://api.openai.com/v1",
}
# What each ACP agent kind calls when its target leaves the base URL empty (its own default). Our
# mock agent calls no provider at all, so it has none.
AGENT_DEFAULT_BASE_URLS: dict[str, str] = {
    ProviderTarget.AgentKind.CLAUDE: "https://api.anthropic.com",
    ProviderTarget.AgentKind.CODEX: "https://api.openai.com/v1",
    ProviderTarget.AgentKind.GEMINI: "https://generativelanguage.googleapis.com",
}


@dataclass(frozen=True, slots=True)
class TargetProblem:
    field: str
    message: str  # for staff: may name the variable or the host


def base_url_effective(*, kind: str, base_url: str) -> str:
    """The URL a direct or mock target really calls (an empty base URL means the default)."""
    if base_url:
        return base_url
    if kind == ProviderTarget.Kind.MOCK:
        return settings.KANDEV_MOCK_PROVIDER_URL
    return DEFAULT_BASE_URLS.get(kind, "")


def agent_base_url_effective(*, agent_kind: str, base_url: str) -> str | None:
    """The URL an ACP agent of this kind calls (empty: the agent's own default); None for an
    agent that calls no provider (our mock agent) or a kind the registry does not know."""
    default = AGENT_DEFAULT_BASE_URLS.get(agent_kind)
    if default is None:
        return None
    return base_url or default


def target_problems(
    *, kind: str, base_url: str, api_key_env: str, agent_kind: str = ""
) -> list[TargetProblem]:
    """Everything about these fields that the operator's allowlists refuse (empty when none)."""
    problems = []
    if kind not in ProviderTarget.Kind.values:
        problems.append(
            TargetProblem("kind", f"must be one of {', '.join(ProviderTarget.Kind.values)}")
        )
    if api_key_env:
        problem = _key_env_problem(api_key_env)
        if problem is not None:
            problems.append(problem)
    if kind == ProviderTarget.Kind.ACP:
        url = agent_base_url_effective(agent_kind=agent_kind, base_url=base_url)
    else:
        url = base_url_effective(kind=kind, base_url=base_url)
    if url is not None:
        refusal = settings.KANDEV_PROVIDER_HOSTS.refusal(url)
        if refusal is not None:
            source = "" if base_url else " (the default for this kind)"
            problems.append(
                TargetProblem("base_url", f"{url!r}{source} {refusal}; see KANDEV_PROVIDER_HOSTS")
            )
    return problems


def _key_env_problem(api_key_env: str) -> TargetProblem | None:
    if not ENV_NAME.match(api_key_env):
        return TargetProblem(
            "api_key_env", "must be the name of an environment variable, not a key"
        )
    allowed = settings.KANDEV_PROVIDER_KEY_ENVS
    if api_key_env not in allowed:
        listed = ", ".join(sorted(allowed)) or "none"
        return TargetProblem(
            "api_key_env",
            f"{api_key_env} is not a provider key variable this server allows "
            f"(KANDEV_PROVIDER_KEY_ENVS: {listed})",
        )
    return None
