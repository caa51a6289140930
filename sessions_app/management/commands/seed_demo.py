"""Seed what a first look needs: the `demo` user, a "Mock" provider target, an "ACP mock agent"
target (our mock ACP agent), one target per real agent CLI (Claude Code, Codex, Gemini CLI, as
installed by `make install`) pointing at the mock provider, and one demo session.

Idempotent: run on every `make run`. The targets go through the same services and allowlists as
any operator's (the mock's host must be in KANDEV_PROVIDER_HOSTS; loopback is by default). The
password comes from --password or KANDEV_DEMO_PASSWORD (the supervisor passes it through the
environment so it never shows in a process listing); without either a fresh one is generated.
Either way it is printed, because it is a local dev login.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from sessions_app.agent.registry import CLAUDE_MODEL, CODEX_MODEL, GEMINI_MODEL
from sessions_app.errors import InvalidInput
from sessions_app.models import ProviderTarget, Session
from sessions_app.services import session_create, target_create, target_update, task_create

DEMO_USERNAME = "demo"
# A local staff login for the admin (/admin/: targets, retry notices, loops, attempt records).
ADMIN_USERNAME = "admin"
MOCK_TARGET_NAME = "Mock"
MOCK_MODEL = "mock-1"
DEMO_SESSION_TITLE = "Try the mock provider"
ACP_TARGET_NAME = "ACP mock agent"


@dataclass(frozen=True, slots=True)
class AgentSeed:
    name: str
    agent_kind: str
    model: str
    # What the agent's own base-URL variable expects after the mock's address; None: the agent
    # calls no provider (our mock agent answers by itself).
    url_suffix: str | None


# No key variable: the targets point at the mock on loopback, which accepts a placeholder key.
AGENT_SEEDS = (
    AgentSeed(ACP_TARGET_NAME, ProviderTarget.AgentKind.MOCK, "", None),
    AgentSeed("Claude Code (mock provider)", ProviderTarget.AgentKind.CLAUDE, CLAUDE_MODEL, ""),
    AgentSeed("Codex (mock provider)", ProviderTarget.AgentKind.CODEX, CODEX_MODEL, "/v1"),
    AgentSeed("Gemini CLI (mock provider)", ProviderTarget.AgentKind.GEMINI, GEMINI_MODEL, ""),
)


@dataclass(frozen=True, slots=True)
class DemoSeed:
    username: str
    password: str
    target_id: int
    session_id: int


def demo_seed(*, password: str, mock_url: str) -> DemoSeed:
    with transaction.atomic():
        user, _ = get_user_model().objects.get_or_create(username=DEMO_USERNAME)
        user.set_password(password)
        user.save(update_fields=["password"])
        target = ProviderTarget.objects.filter(name=MOCK_TARGET_NAME).first()
        if target is None:
            target = target_create(
                name=MOCK_TARGET_NAME,
                kind=ProviderTarget.Kind.MOCK,
                base_url=mock_url,
                model=MOCK_MODEL,
            )
        else:
            # The mock's port may differ from the last run (KANDEV_MOCK_PORT): follow it.
            target_update(
                target=target, kind=ProviderTarget.Kind.MOCK, base_url=mock_url, model=MOCK_MODEL
            )
        for seed in AGENT_SEEDS:
            _agent_target_seed(seed, mock_url=mock_url)
        session = Session.objects.filter(owner=user).order_by("id").first()
        if session is None:
            task = task_create(owner=user, title="Demo task")
            session = session_create(owner=user, target=target, title=DEMO_SESSION_TITLE, task=task)
    return DemoSeed(
        username=user.username, password=password, target_id=target.pk, session_id=session.pk
    )


def _agent_target_seed(seed: AgentSeed, *, mock_url: str) -> ProviderTarget:
    base_url = "" if seed.url_suffix is None else f"{mock_url.rstrip('/')}{seed.url_suffix}"
    fields: dict[str, Any] = {
        "agent_kind": seed.agent_kind,
        "base_url": base_url,
        "model": seed.model,
    }
    target = ProviderTarget.objects.filter(name=seed.name).first()
    if target is None:
        return target_create(name=seed.name, kind=ProviderTarget.Kind.ACP, **fields)
    # The mock's port may differ from the last run (KANDEV_MOCK_PORT): follow it.
    return target_update(target=target, kind=ProviderTarget.Kind.ACP, **fields)


def admin_seed(*, password: str) -> str:
    """Create or refresh the local staff login; returns its username."""
    user, _ = get_user_model().objects.get_or_create(username=ADMIN_USERNAME)
    user.is_staff = user.is_superuser = True
    user.set_password(password)
    user.save()
    return user.username


class Command(BaseCommand):
    help = (
        "Create or refresh the demo user, the Mock target, one target per ACP agent kind (all "
        "pointing at the mock provider) and a demo session."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--password", default=None, help="the demo user's password")
        parser.add_argument(
            "--admin-password",
            default=None,
            help="also create or refresh the staff login 'admin' with this password "
            "(default: KANDEV_ADMIN_PASSWORD; neither: no staff login)",
        )

    def handle(
        self,
        *args: Any,
        password: str | None = None,
        admin_password: str | None = None,
        **options: Any,
    ) -> None:
        password = password or settings.KANDEV_DEMO_PASSWORD or secrets.token_urlsafe(9)
        try:
            seed = demo_seed(password=password, mock_url=settings.KANDEV_MOCK_PROVIDER_URL)
        except InvalidInput as error:
            raise CommandError(f"The demo's targets: {error.field} {error.message}") from None
        self.stdout.write(
            f"Demo login: {seed.username} / {seed.password} "
            f"(target {MOCK_TARGET_NAME} #{seed.target_id}, session #{seed.session_id})"
        )
        admin_password = admin_password or settings.KANDEV_ADMIN_PASSWORD
        if admin_password:
            username = admin_seed(password=admin_password)
            self.stdout.write(f"Admin login (/admin/): {username} / {admin_password}")
