"""Set up a provider target from the command line (staff's other way besides the admin).

    python manage.py target_add "Claude" --kind anthropic --model claude-sonnet-4-5 \\
        --key-env ANTHROPIC_API_KEY
    python manage.py target_add "Local proxy" --kind openai --model gpt-4.1 \\
        --base-url http://127.0.0.1:4000/v1 --key-env OPENAI_API_KEY --fallback Claude
    python manage.py target_add "Claude" --update --model claude-opus-4-1

The key variable must be listed in KANDEV_PROVIDER_KEY_ENVS and the base URL's host in
KANDEV_PROVIDER_HOSTS; anything else is refused with the reason, and nothing is written.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.errors import InvalidInput
from sessions_app.models import PermissionPolicyChoice, ProviderTarget
from sessions_app.services import target_create, target_update


class Command(BaseCommand):
    help = (
        "Create a provider target, or change one with --update. Staff only: it runs on the server."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--kind", choices=ProviderTarget.Kind.values)
        parser.add_argument("--model")
        parser.add_argument("--base-url", help="empty for the provider's default")
        parser.add_argument("--key-env", help="name of the variable holding the key")
        parser.add_argument(
            "--agent",
            choices=ProviderTarget.AgentKind.values,
            help="ACP only: the registry's agent kind (never a command line)",
        )
        parser.add_argument(
            "--permissions",
            choices=PermissionPolicyChoice.values,
            help="ACP only: who answers the agent's requests to use a tool (default: ask a person)",
        )
        parser.add_argument(
            "--fallback",
            action="append",
            default=[],
            help="a target to fail over to, by name (repeat for more, in order; new targets only)",
        )
        parser.add_argument("--update", action="store_true", help="change an existing target")

    def handle(
        self, *args: Any, name: str, update: bool, fallback: list[str], **options: Any
    ) -> None:
        fields = {
            "kind": options["kind"],
            "model": options["model"],
            "base_url": options["base_url"],
            "api_key_env": options["key_env"],
            "agent_kind": options["agent"],
            "permission_policy": options["permissions"],
        }
        try:
            if update:
                target = self._update(name, fallback, fields)
                verb = "Updated"
            else:
                target = self._create(name, fallback, fields)
                verb = "Created"
        except InvalidInput as error:
            raise CommandError(f"{error.field}: {error.message}") from None
        self.stdout.write(f"{verb} target {target.name} #{target.pk} ({target.kind}).")

    def _create(self, name: str, fallback_names: list[str], fields: dict) -> ProviderTarget:
        if fields["kind"] is None:
            raise CommandError("--kind is required for a new target.")
        fallbacks = []
        for fallback_name in fallback_names:
            found = ProviderTarget.objects.filter(name=fallback_name).first()
            if found is None:
                raise CommandError(f"No target named {fallback_name!r} to fall back to.")
            fallbacks.append(found.pk)
        given = {field: value for field, value in fields.items() if value is not None}
        return target_create(name=name, fallbacks=fallbacks, **given)

    def _update(self, name: str, fallback_names: list[str], fields: dict) -> ProviderTarget:
        if fallback_names:
            raise CommandError("--fallback works for new targets; change fallbacks in the admin.")
        target = ProviderTarget.objects.filter(name=name).first()
        if target is None:
            raise CommandError(f"No target named {name!r}; leave out --update to create it.")
        return target_update(target=target, **fields)
