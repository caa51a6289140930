"""API tokens: their owner lists and revokes them; a token may expire; expired and revoked tokens
are refused with 401 like unknown ones."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from sessions_app.api_auth import api_token_create
from sessions_app.models import ApiToken

pytestmark = pytest.mark.django_db


def bearer(token: str) -> Client:
    return Client(headers={"authorization": f"Bearer {token}"})


def test_the_owner_lists_their_tokens_without_any_secret(owner, stranger):
    mine = api_token_create(user=owner, label="laptop")
    api_token_create(user=owner, label="ci", expires_at=timezone.now() + dt.timedelta(days=7))
    strangers = api_token_create(user=stranger, label="stranger's")

    response = bearer(mine).get("/api/v1/tokens")

    assert response.status_code == 200
    listed = response.json()
    assert sorted(t["label"] for t in listed) == ["ci", "laptop"]
    assert {t["prefix"] for t in listed} == {t.prefix for t in ApiToken.objects.filter(user=owner)}
    text = response.content.decode()
    assert mine not in text and strangers[:12] not in text and "digest" not in text
    ci = next(t for t in listed if t["label"] == "ci")
    assert ci["expires"] is not None and ci["last_used"] is None


def test_the_owner_revokes_a_token_and_it_stops_working_at_once(owner):
    kept = api_token_create(user=owner, label="kept")
    lost = api_token_create(user=owner, label="lost")
    lost_id = ApiToken.objects.get(label="lost").pk

    response = bearer(kept).delete(f"/api/v1/tokens/{lost_id}")

    assert response.status_code == 204
    assert bearer(lost).get("/api/v1/tasks").status_code == 401
    assert [t["label"] for t in bearer(kept).get("/api/v1/tokens").json()] == ["kept"]


def test_a_token_can_revoke_itself(owner):
    token = api_token_create(user=owner)
    own_id = ApiToken.objects.get(user=owner).pk
    assert bearer(token).delete(f"/api/v1/tokens/{own_id}").status_code == 204
    assert bearer(token).get("/api/v1/tokens").status_code == 401


def test_a_foreign_token_is_the_same_404_as_an_unknown_one_and_keeps_working(owner, stranger):
    mine = api_token_create(user=owner)
    strangers = api_token_create(user=stranger)
    bobs_id = ApiToken.objects.get(user=stranger).pk

    foreign = bearer(mine).delete(f"/api/v1/tokens/{bobs_id}")
    unknown = bearer(mine).delete(f"/api/v1/tokens/{bobs_id + 10_000}")

    assert foreign.status_code == unknown.status_code == 404
    assert foreign.content == unknown.content
    assert bearer(strangers).get("/api/v1/tasks").status_code == 200


def test_an_expired_token_is_refused_with_401_and_an_unexpired_one_works(owner):
    now = timezone.now()
    expired = api_token_create(user=owner, expires_at=now + dt.timedelta(minutes=5))
    ApiToken.objects.filter(user=owner).update(expires_at=now - dt.timedelta(seconds=1))
    fresh = api_token_create(user=owner, expires_at=now + dt.timedelta(hours=1))

    refused = bearer(expired).get("/api/v1/tasks")

    assert refused.status_code == 401 and refused.json() == {"detail": "Unauthorized"}
    assert bearer(fresh).get("/api/v1/tasks").status_code == 200


def test_a_token_cannot_be_created_already_expired(owner):
    from sessions_app.errors import InvalidInput

    with pytest.raises(InvalidInput):
        api_token_create(user=owner, expires_at=timezone.now() - dt.timedelta(seconds=1))


def test_the_command_creates_a_labelled_token_that_expires(owner, capsys):
    before = timezone.now()
    call_command("create_api_token", username="owner", label="ci", expires_in_days=30)
    token = capsys.readouterr().out.strip()

    stored = ApiToken.objects.get(user=owner)
    assert stored.label == "ci"
    assert (
        before + dt.timedelta(days=30)
        <= stored.expires_at
        <= timezone.now() + dt.timedelta(days=30)
    )
    assert bearer(token).get("/api/v1/tasks").status_code == 200


def test_the_command_refuses_a_nonsense_expiry(owner):
    with pytest.raises(CommandError, match="at least 1"):
        call_command("create_api_token", username="owner", expires_in_days=0)
