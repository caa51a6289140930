"""Staff set targets up (services, the admin, `manage.py target_add`), within the operator's
allowlists: a key only from KANDEV_PROVIDER_KEY_ENVS, a base URL only on a KANDEV_PROVIDER_HOSTS
host. A refused target gets a clear error and nothing is written.

Every URL here is on loopback; "another host" is 127.0.0.2. Nothing in this file connects.
"""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from recovery.hosts import HostAllowlist
from sessions_app.errors import InvalidInput
from sessions_app.models import ProviderTarget
from sessions_app.services import target_create, target_update

pytestmark = pytest.mark.django_db

ALLOWED = {"name": "Claude", "kind": "anthropic", "model": "claude-x"}


@pytest.mark.parametrize(
    "key_env",
    [
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "KANDEV_DEMO_PASSWORD",
        "HOME",
        "AWS_SECRET_ACCESS_KEY",
    ],
)
def test_a_key_variable_outside_the_allowlist_is_refused_when_saved(key_env):
    with pytest.raises(InvalidInput) as refused:
        target_create(**ALLOWED, api_key_env=key_env)

    assert refused.value.field == "api_key_env"
    assert "KANDEV_PROVIDER_KEY_ENVS" in refused.value.message
    assert not ProviderTarget.objects.exists()


def test_a_pasted_key_is_refused_as_a_key_variable():
    with pytest.raises(InvalidInput) as refused:
        target_create(**ALLOWED, api_key_env="sk-ant-test-000")

    assert (refused.value.field, refused.value.message) == (
        "api_key_env",
        "must be the name of an environment variable, not a key",
    )


@pytest.mark.parametrize(
    ("base_url", "why"),
    [
        ("http://127.0.0.2:8765", "127.0.0.2:8765, which is not an allowed provider host"),
        ("http://127.1:8765", "not an allowed provider host"),  # 127.0.0.1 spelled another way
        ("ftp://127.0.0.1/", "must start with http:// or https://"),
        ("http://user:pw@127.0.0.1:8765", "must not carry a user name or password"),
        ("http://127.0.0.2\\@127.0.0.1:8765", "must not carry a user name or password"),
        ("not a url", "must start with http:// or https://"),
    ],
)
def test_a_base_url_outside_the_allowlist_is_refused_when_saved(base_url, why):
    with pytest.raises(InvalidInput) as refused:
        target_create(**ALLOWED, api_key_env="ANTHROPIC_API_KEY", base_url=base_url)

    assert refused.value.field == "base_url"
    assert why in refused.value.message and "KANDEV_PROVIDER_HOSTS" in refused.value.message
    assert not ProviderTarget.objects.exists()


def test_the_operators_allowlists_decide(settings):
    settings.KANDEV_PROVIDER_KEY_ENVS = frozenset({"TEAM_PROXY_KEY"})
    settings.KANDEV_PROVIDER_HOSTS = HostAllowlist.parse(["127.0.0.2:4000"])

    target = target_create(
        **ALLOWED, api_key_env="TEAM_PROXY_KEY", base_url="http://127.0.0.2:4000/v1"
    )

    assert target.base_url == "http://127.0.0.2:4000/v1"
    for refused in ({"api_key_env": "ANTHROPIC_API_KEY"}, {"base_url": "http://127.0.0.2:4001"}):
        with pytest.raises(InvalidInput):
            target_update(target=target, **refused)


def test_an_empty_base_url_means_the_providers_default_which_must_be_allowed_too(settings):
    target_create(
        name="Claude", kind="anthropic", model="claude-x", api_key_env="ANTHROPIC_API_KEY"
    )
    settings.KANDEV_PROVIDER_HOSTS = HostAllowlist.parse(["127.0.0.1"])

    with pytest.raises(InvalidInput) as refused:
        target_create(name="GPT", kind="openai", model="gpt-x", api_key_env="OPENAI_API_KEY")

    assert "'https://api.openai.com/v1' (the default for this kind)" in refused.value.message


def test_an_update_that_is_refused_changes_nothing():
    target = target_create(**ALLOWED, api_key_env="ANTHROPIC_API_KEY")

    with pytest.raises(InvalidInput):
        target_update(target=target, api_key_env="SECRET_KEY", model="claude-y")

    stored = ProviderTarget.objects.get(pk=target.pk)
    assert (stored.api_key_env, stored.model) == ("ANTHROPIC_API_KEY", "claude-x")


@pytest.fixture
def staff_browser(db) -> Client:
    operator = get_user_model().objects.create_superuser(username="ops", email="ops@example.test")
    browser = Client()
    browser.force_login(operator)
    return browser


def admin_form(**fields) -> dict:
    return {
        "name": "Claude",
        "kind": "anthropic",
        "base_url": "",
        "model": "claude-x",
        "api_key_env": "ANTHROPIC_API_KEY",
        "command": "",
        "permission_policy": "ask",
        "fallback_links-TOTAL_FORMS": "0",
        "fallback_links-INITIAL_FORMS": "0",
        **fields,
    }


def test_staff_add_a_target_in_the_admin(staff_browser):
    response = staff_browser.post("/admin/sessions_app/providertarget/add/", admin_form())

    assert response.status_code == 302
    assert ProviderTarget.objects.get().api_key_env == "ANTHROPIC_API_KEY"


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"api_key_env": "SECRET_KEY"}, "SECRET_KEY is not a provider key variable"),
        ({"base_url": "http://127.0.0.2:8765"}, "127.0.0.2:8765, which is not an allowed"),
        ({"name": "Claude\u202eedualc"}, "bidirectional-override characters (found U+202E)"),
        ({"model": "claude\u2066x"}, "bidirectional-override characters (found U+2066)"),
    ],
)
def test_the_admin_refuses_what_the_allowlists_refuse_with_the_reason(staff_browser, fields, why):
    response = staff_browser.post("/admin/sessions_app/providertarget/add/", admin_form(**fields))

    assert response.status_code == 200
    assert why in response.content.decode()
    assert not ProviderTarget.objects.exists()


def test_the_admin_flags_a_target_edited_in_the_database_that_workers_would_refuse(staff_browser):
    target = target_create(**ALLOWED, api_key_env="ANTHROPIC_API_KEY")
    ProviderTarget.objects.filter(pk=target.pk).update(api_key_env="SECRET_KEY")

    listing = staff_browser.get("/admin/sessions_app/providertarget/").content.decode()
    page = staff_browser.get(f"/admin/sessions_app/providertarget/{target.pk}/change/")

    assert 'alt="False"' in listing
    assert "SECRET_KEY is not a provider key variable" in page.content.decode()


def test_the_admin_offers_the_permission_policy_with_ask_chosen_for_a_new_target(staff_browser):
    page = staff_browser.get("/admin/sessions_app/providertarget/add/").content.decode()

    assert '<option value="ask" selected>' in page
    response = staff_browser.post(
        "/admin/sessions_app/providertarget/add/", admin_form(permission_policy="deny_all")
    )
    assert response.status_code == 302
    assert ProviderTarget.objects.get().permission_policy == "deny_all"


def test_target_add_sets_and_changes_who_answers_an_agents_requests():
    target_add("Agent", "--kind", "acp", "--agent", "mock")
    assert ProviderTarget.objects.get(name="Agent").permission_policy == "ask"

    target_add("Agent", "--update", "--permissions", "allow_read_only")

    assert ProviderTarget.objects.get(name="Agent").permission_policy == "allow_read_only"
    with pytest.raises(CommandError):
        target_add("Agent", "--update", "--permissions", "everything")


def test_an_ordinary_user_can_not_reach_the_target_admin(owner):
    browser = Client()
    browser.force_login(owner)

    response = browser.post("/admin/sessions_app/providertarget/add/", admin_form())

    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not ProviderTarget.objects.exists()


def target_add(*args: str) -> str:
    out = io.StringIO()
    call_command("target_add", *args, stdout=out)
    return out.getvalue()


def test_target_add_creates_a_target_with_fallbacks_and_updates_it():
    target_add("Spare", "--kind", "mock")

    output = target_add(
        "Claude", "--kind", "anthropic", "--model", "claude-x", "--key-env", "ANTHROPIC_API_KEY",
        "--base-url", "http://127.0.0.1:4000", "--fallback", "Spare",
    )  # fmt: skip
    target_add("Claude", "--update", "--model", "claude-y")

    claude = ProviderTarget.objects.get(name="Claude")
    assert output.startswith(f"Created target Claude #{claude.pk}")
    assert (claude.kind, claude.model, claude.base_url, claude.api_key_env) == (
        "anthropic",
        "claude-y",
        "http://127.0.0.1:4000",
        "ANTHROPIC_API_KEY",
    )
    assert [link.fallback.name for link in claude.fallback_links.all()] == ["Spare"]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--key-env", "SECRET_KEY"], "api_key_env: SECRET_KEY is not a provider key variable"),
        (["--base-url", "http://127.0.0.2:8765"], "base_url: 'http://127.0.0.2:8765' names host"),
        (["--fallback", "Nobody"], "No target named 'Nobody'"),
    ],
)
def test_target_add_refuses_with_the_reason_and_writes_nothing(args, why):
    with pytest.raises(CommandError, match=re.escape(why)):
        target_add("Claude", "--kind", "anthropic", "--model", "claude-x", *args)

    assert not ProviderTarget.objects.exists()
