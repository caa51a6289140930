"""`manage.py seed_demo`: what `make run` seeds on every start, idempotently."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from sessions_app.models import ProviderTarget, Session

pytestmark = pytest.mark.django_db


def seed(**options) -> str:
    out = io.StringIO()
    call_command("seed_demo", stdout=out, **options)
    return out.getvalue()


def test_it_creates_the_demo_user_a_mock_target_and_a_session(settings):
    settings.KANDEV_MOCK_PROVIDER_URL = "http://127.0.0.1:18765"

    output = seed(password="demo-pass-1")

    demo = get_user_model().objects.get(username="demo")
    assert demo.check_password("demo-pass-1")
    assert "Demo login: demo / demo-pass-1" in output
    target = ProviderTarget.objects.get(name="Mock")
    assert (target.kind, target.model, target.base_url) == (
        "mock",
        "mock-1",
        "http://127.0.0.1:18765",
    )
    session = Session.objects.get(owner=demo)
    assert session.target == target
    assert session.task.owner == demo


def test_running_it_again_changes_the_password_and_follows_the_mock_without_duplicates(settings):
    settings.KANDEV_MOCK_PROVIDER_URL = "http://127.0.0.1:18765"
    seed(password="first-pass")
    settings.KANDEV_MOCK_PROVIDER_URL = "http://127.0.0.1:19999"

    seed(password="second-pass")

    demo = get_user_model().objects.get(username="demo")
    assert demo.check_password("second-pass")
    assert not demo.check_password("first-pass")
    assert ProviderTarget.objects.filter(name="Mock").count() == 1
    assert ProviderTarget.objects.get(name="Mock").base_url == "http://127.0.0.1:19999"
    assert Session.objects.filter(owner=demo).count() == 1


def test_without_a_password_it_generates_and_prints_one(settings):
    settings.KANDEV_DEMO_PASSWORD = ""

    output = seed()

    password = output.split("Demo login: demo / ", 1)[1].split()[0]
    assert len(password) >= 12
    assert get_user_model().objects.get(username="demo").check_password(password)


def test_it_takes_the_password_from_the_environment(settings):
    settings.KANDEV_DEMO_PASSWORD = "from-the-env-pass"  # settings read KANDEV_DEMO_PASSWORD

    seed()

    assert get_user_model().objects.get(username="demo").check_password("from-the-env-pass")


def test_a_mock_url_on_a_host_the_operator_did_not_allow_is_refused_and_nothing_is_seeded(settings):
    settings.KANDEV_MOCK_PROVIDER_URL = "http://127.0.0.2:18765"

    with pytest.raises(CommandError, match=r"127\.0\.0\.2:18765.*KANDEV_PROVIDER_HOSTS"):
        seed(password="demo-pass-1")

    assert not ProviderTarget.objects.exists()
    assert not get_user_model().objects.filter(username="demo").exists()


def test_with_an_admin_password_it_makes_a_staff_login_that_opens_the_admin(settings, client):
    settings.KANDEV_ADMIN_PASSWORD = ""
    assert "Admin login" not in seed(password="demo-pass-1")
    assert not get_user_model().objects.filter(username="admin").exists()

    output = seed(password="demo-pass-1", admin_password="admin-pass-1")

    assert "Admin login (/admin/): admin / admin-pass-1" in output
    users = get_user_model().objects
    admin = users.get(username="admin")
    assert admin.check_password("admin-pass-1") and admin.is_staff
    client.force_login(admin)
    assert client.get("/admin/ladder/retrynotice/").status_code == 200
    # The demo user stays an ordinary user: the admin refuses it.
    client.force_login(users.get(username="demo"))
    assert client.get("/admin/ladder/retrynotice/").status_code == 302
