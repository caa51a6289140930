"""Where Django says a login ended or a person changed: thin receivers, the rules are
sessions_app/services/sockets.py's. Connected in apps.py."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.contrib.sessions.models import Session as LoginSession
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from sessions_app.services.sockets import login_sockets_close, user_sockets_recheck

# A save that names its fields and none of these (a login's last_login) can't end a login.
LOGIN_FIELDS = frozenset({"password", "is_active"})


@receiver(user_logged_out, dispatch_uid="sockets-logged-out")
def logged_out(sender: Any, request: Any, **kwargs: Any) -> None:
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        login_sockets_close(session_key=session_key)


# Every deletion that goes through the ORM: logout's flush, the admin, the shell, `clearsessions`
# and the old key of a cycled one (a password change that keeps its own login).
@receiver(post_delete, sender=LoginSession, dispatch_uid="sockets-login-session-deleted")
def login_session_deleted(sender: Any, instance: LoginSession, **kwargs: Any) -> None:
    login_sockets_close(session_key=instance.session_key)


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="sockets-user-saved")
def user_saved(
    sender: Any, instance: Any, created: bool, update_fields: Any = None, **kwargs: Any
) -> None:
    if created or (update_fields is not None and not LOGIN_FIELDS & set(update_fields)):
        return
    user_sockets_recheck(user_id=instance.pk)


@receiver(post_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="sockets-user-deleted")
def user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    user_sockets_recheck(user_id=instance.pk)
