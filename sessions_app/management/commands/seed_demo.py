"""Seed what a first look needs: the `demo` user, a "Mock" provider target, an "ACP mock agent"
target (our mock ACP agent, run by this interpreter) and one demo session.

Idempotent: run on every `make run`. The targets go through the same services and allowlists as
any operator's (the mock's host must be in KANDEV_PROVIDER_HOSTS; loopback is by default). The password comes from --password or KANDEV_DEMO_PASSWORD
(the supervisor passes it through the environment so it never shows in a process listing);
without either a fresh one is generated. Either way it is printed, because it is a local dev login.
"""

from __future__ import annotations

import secrets
import shlex
import sys
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from sessions_app.errors import InvalidInput
from sessions_app.models import ProviderTarget, Session
from sessions_app.services import session_create, target_create, target_update, task_create

DEMO_USERNAME = "demo"
MOCK_TARGET_NAME = "Mock"
MOCK_MODEL = "mock-1"
DEMO_SESSION_TITLE = "Try the mock provider"
ACP_TARGET_NAME = "ACP mock agent"


def acp_mock_command() -> str:
    # This interpreter, so the agent finds the project's virtualenv wherever it lives.
    return shlex.join([sys.executable, "-m", "recovery.mock.acp_agent"])


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
        _acp_target_seed()
        session = Session.objects.filter(owner=user).order_by("id").first()
        if session is None:
            task = task_create(owner=user, title="Demo task")
            session = session_create(owner=user, target=target, title=DEMO_SESSION_TITLE, task=task)
    return DemoSeed(
        username=user.username, password=password, target_id=target.pk, session_id=session.pk
    )


def _acp_target_seed() -> ProviderTarget:
    target = ProviderTarget.objects.filter(name=ACP_TARGET_NAME).first()
    if target is None:
        return target_create(
            name=ACP_TARGET_NAME, kind=ProviderTarget.Kind.ACP, command=acp_mock_command()
        )
    # The interpreter's path may differ from the last run (a new virtualenv): follow it.
    return target_update(target=target, kind=ProviderTarget.Kind.ACP, command=acp_mock_command())


class Command(BaseCommand):
    help = (
        "Create or refresh the demo user, the Mock and ACP mock agent targets and a demo session."
    )

    def add_arguments(self, parser):
        parser.add_argument("--password", default=None, help="the demo user's password")

    def handle(self, *args, password: str | None = None, **options):
        password = password or settings.KANDEV_DEMO_PASSWORD or secrets.token_urlsafe(9)
        try:
            seed = demo_seed(password=password, mock_url=settings.KANDEV_MOCK_PROVIDER_URL)
        except InvalidInput as error:
            raise CommandError(f"The demo's {MOCK_TARGET_NAME} target: {error.message}") from None
        self.stdout.write(
            f"Demo login: {seed.username} / {seed.password} "
            f"(target {MOCK_TARGET_NAME} #{seed.target_id}, session #{seed.session_id})"
        )
