"""Turn a ProviderTarget row into the wire layer's TargetConfig, reading the key at call time.

The key lives only in the worker's environment, named by ``api_key_env``; it is read for each run
and never stored, logged or put in an error message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.conf import settings

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
            detail=f"Target {target.name} is an ACP agent; this worker runs direct providers only.",
        )
    api_key = environ.get(target.api_key_env, "") if target.api_key_env else ""
    if target.kind == ProviderTarget.Kind.MOCK and not target.api_key_env:
        api_key = MOCK_PLACEHOLDER_KEY
    if not api_key:
        where = (
            f"the environment variable {target.api_key_env} is not set on the worker"
            if target.api_key_env
            else "no API key environment variable is configured for it"
        )
        raise TargetUnusable(
            code="missing_credentials",
            detail=f"Target {target.name} can't be called: {where}.",
        )
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
