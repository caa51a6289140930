"""Bearer-token auth for the JSON API and the tokens' life: created (shown once), used, revoked
by their owner, or expired. Only the SHA-256 digest of a token is ever stored."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from django.contrib.auth.models import User
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from sessions_app.errors import InvalidInput, TokenNotFound
from sessions_app.models import ApiToken
from sessions_app.text_rules import single_line_problem

TOKEN_PREFIX = "kdv_"
# last_used_at is informational; writing it on every request would turn reads into writes.
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def api_token_create(*, user: User, label: str = "", expires_at: dt.datetime | None = None) -> str:
    """Create a token for ``user`` and return it. This is the only time it exists in clear."""
    problem = single_line_problem(label)
    if problem is not None:
        raise InvalidInput("label", problem)
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("expires_at", "must be in the future")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    ApiToken.objects.create(
        user=user,
        digest=token_digest(token),
        prefix=token[:12],
        label=label.strip(),
        expires_at=expires_at,
    )
    return token


def api_token_revoke(*, user: User, token_id: int) -> None:
    """Revoke one of ``user``'s tokens. Unknown, foreign and already revoked ids raise the same
    TokenNotFound, so nobody learns which ids exist."""
    revoked = ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if revoked != 1:
        raise TokenNotFound(token_id)


def api_token_user(*, token: str, now: dt.datetime | None = None) -> User | None:
    """The active user a live token belongs to; None for unknown, revoked and expired tokens."""
    if not token or len(token) > 200:
        return None
    now = now or timezone.now()
    api_token = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(token), user__is_active=True, revoked_at__isnull=True)
        .exclude(expires_at__lte=now)
        .first()
    )
    if api_token is None:
        return None
    if api_token.last_used_at is None or now - api_token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=api_token.pk).update(last_used_at=now)
    return api_token.user


class TokenRequest(HttpRequest):
    """The request an operation behind BearerTokenAuth receives: django-ninja sets ``auth`` to
    what ``authenticate`` returned, and calls the operation only when that was a user."""

    auth: User


class BearerTokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        return api_token_user(token=token.strip())
