"""Print a new JSON API token for a user: `python manage.py create_api_token --username NAME`."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from sessions_app.api_auth import api_token_create


class Command(BaseCommand):
    help = "Create a bearer token for the JSON API and print it (it is shown only this once)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", required=True)

    def handle(self, *args, username: str, **options) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: username})
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        self.stdout.write(api_token_create(user=user))
