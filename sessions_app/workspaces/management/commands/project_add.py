"""Register a project from the command line (staff's other way besides the admin).

    python manage.py project_add app /srv/projects/app --base main --user alice --group dev

The repository must be inside one of KANDEV_PROJECT_ROOTS; the base (default: the branch the
repository's HEAD names) must be a branch, tag or commit of it. Anything else is refused with
the reason, and nothing is written.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.errors import InvalidInput
from sessions_app.workspaces.services import project_register


class Command(BaseCommand):
    help = "Register a local git repository as a project, and choose who may use it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("path", help="the repository's checkout, inside a project root")
        parser.add_argument("--base", help="branch, tag or commit tasks start from")
        parser.add_argument("--user", action="append", default=[], help="a username (repeat)")
        parser.add_argument("--group", action="append", default=[], help="a group name (repeat)")

    def handle(
        self,
        *args: Any,
        name: str,
        path: str,
        base: str | None,
        user: list[str],
        group: list[str],
        **options: Any,
    ) -> None:
        users = list(User.objects.filter(username__in=user))
        groups = list(Group.objects.filter(name__in=group))
        unknown = sorted(set(user) - {u.username for u in users})
        unknown += sorted(set(group) - {g.name for g in groups})
        if unknown:
            raise CommandError(f"no such user or group: {', '.join(unknown)}")
        try:
            project = project_register(
                name=name, repo_path=path, base=base, users=users, groups=groups
            )
        except InvalidInput as error:
            raise CommandError(f"{error.field}: {error.message}") from None
        self.stdout.write(
            f"project {project.name!r} (#{project.pk}) starts tasks from {project.base_ref}"
        )
