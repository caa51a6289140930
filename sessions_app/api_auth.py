"""Bearer-token auth for the JSON API. Only the SHA-256 digest of a token is ever stored."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from sessions_app.models import ApiToken

TOKEN_PREFIX = "kdv_"
# last_used_at is informational; writing it on every request would turn reads into writes.
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def api_token_create(*, user: AbstractBaseUser) -> str:
    """Create a token for ``user`` and return it. This is the only time it exists in clear."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, digest=token_digest(token), prefix=token[:12])
    return token


def api_token_user(*, token: str) -> AbstractBaseUser | None:
    if not token or len(token) > 200:
        return None
    api_token = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(token), user__is_active=True)
        .first()
    )
    if api_token is None:
        return None
    now = timezone.now()
    if api_token.last_used_at is None or now - api_token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=api_token.pk).update(last_used_at=now)
    return api_token.user


class BearerTokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> AbstractBaseUser | None:
        return api_token_user(token=token.strip())
