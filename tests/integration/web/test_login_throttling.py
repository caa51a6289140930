"""Login throttling (django-axes) on the app's login and the admin's: a guessed password stops
working after KANDEV_LOGIN_FAILURE_LIMIT failures, even when the next guess is right."""

from __future__ import annotations

import datetime as dt

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient, Client

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-pass-123"
LOGINS = {
    "app": ("/accounts/login/", "/"),
    "admin": ("/admin/login/?next=/admin/", "/admin/"),
}


@pytest.fixture
def demo(db):
    return get_user_model().objects.create_user(
        "demo", password=PASSWORD, is_staff=True, is_superuser=True
    )


def attempt(client: Client, login_url: str, password: str, *, username: str = "demo"):
    return client.post(login_url, {"username": username, "password": password})


def is_logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("which", sorted(LOGINS))
def test_fifty_wrong_passwords_lock_the_account_out_even_for_the_right_one(demo, which):
    login_url, _ = LOGINS[which]
    client = Client()
    for _ in range(50):
        attempt(client, login_url, "wrong-guess")

    response = attempt(client, login_url, PASSWORD)

    assert not is_logged_in(client)
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed logins" in page and "15 minutes" in page


@pytest.mark.parametrize("which", sorted(LOGINS))
def test_the_right_password_still_works_below_the_limit(demo, which, settings):
    login_url, landing = LOGINS[which]
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt(client, login_url, "wrong-guess").status_code == 200

    response = attempt(client, login_url, PASSWORD)

    assert response.status_code == 302 and response["Location"].startswith(landing)
    assert is_logged_in(client)


def test_a_successful_login_starts_the_failure_count_again(demo, settings):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "/accounts/login/", "wrong-guess")
    attempt(client, "/accounts/login/", PASSWORD)
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "/accounts/login/", "wrong-guess")

    assert attempt(client, "/accounts/login/", PASSWORD).status_code == 302


def test_the_limit_and_the_cool_off_come_from_settings(demo, settings):
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = dt.timedelta(minutes=3)
    client = Client()
    attempt(client, "/accounts/login/", "wrong-guess")
    attempt(client, "/accounts/login/", "wrong-guess")

    response = attempt(client, "/accounts/login/", PASSWORD)

    assert response.status_code == 429 and "3 minutes" in response.content.decode()
    assert not is_logged_in(client)


def test_a_lockout_for_one_account_leaves_another_account_alone(demo, settings):
    get_user_model().objects.create_user("other", password=PASSWORD)
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT + 1):
        attempt(client, "/accounts/login/", "wrong-guess")

    response = attempt(client, "/accounts/login/", PASSWORD, username="other")

    assert response.status_code == 302 and is_logged_in(client)


@pytest.mark.django_db(transaction=True)
async def test_the_lockout_page_also_comes_through_the_asgi_stack_daphne_runs(settings):
    await database_sync_to_async(get_user_model().objects.create_user)("demo", password=PASSWORD)
    client = AsyncClient()
    try:
        for _ in range(settings.AXES_FAILURE_LIMIT):
            await client.post("/accounts/login/", {"username": "demo", "password": "wrong-guess"})
        response = await client.post("/accounts/login/", {"username": "demo", "password": PASSWORD})
    finally:
        # The test client keeps the request thread's connection open; this closes it.
        await database_sync_to_async(lambda: None)()

    assert response.status_code == 429 and "Too many failed logins" in response.content.decode()
    assert "sessionid" not in response.cookies


def test_a_forged_forwarded_for_header_does_not_reset_the_count(demo, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT + 5):
        client.post(
            "/accounts/login/",
            {"username": "demo", "password": "wrong-guess"},
            headers={"x-forwarded-for": f"127.0.0.{n + 2}"},
        )

    response = client.post(
        "/accounts/login/",
        {"username": "demo", "password": PASSWORD},
        headers={"x-forwarded-for": "127.0.0.250"},
    )

    assert response.status_code == 429 and not is_logged_in(client)
