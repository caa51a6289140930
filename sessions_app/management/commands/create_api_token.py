"""Print a new JSON API token for a user:
`python manage.py create_api_token --username NAME [--label TEXT] [--expires-in-days N]`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from sessions_app.api_auth import api_token_create
from sessions_app.errors import InvalidInput


class Command(BaseCommand):
    help = "Create a bearer token for the JSON API and print it (it is shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", required=True)
        parser.add_argument("--label", default="", help="a note to tell tokens apart, e.g. ci")
        parser.add_argument(
            "--expires-in-days", type=int, default=None, help="refused after this many days"
        )

    def handle(
        self, *args: Any, username: str, label: str, expires_in_days: int | None, **options: Any
    ) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: username})
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        expires_at = None
        if expires_in_days is not None:
            if expires_in_days < 1:
                raise CommandError("--expires-in-days must be at least 1.")
            expires_at = timezone.now() + dt.timedelta(days=expires_in_days)
        try:
            token = api_token_create(user=user, label=label, expires_at=expires_at)
        except InvalidInput as error:
            raise CommandError(f"--{error.field.replace('_', '-')} {error.message}.") from None
        self.stdout.write(token)
