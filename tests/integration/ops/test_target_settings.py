"""KANDEV_PROVIDER_KEY_ENVS and KANDEV_PROVIDER_HOSTS are parsed at start-up: a bad value stops it
with a message naming the variable, before any target is used."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from kandev_web.provider_env import (
    DEFAULT_PROVIDER_HOSTS,
    DEFAULT_PROVIDER_KEY_ENVS,
    provider_hosts,
    provider_key_envs,
)
from recovery.hosts import HostRule
from tests.integration.ops.test_settings_startup import start_up


def test_the_default_key_variables_are_the_conventional_provider_ones(monkeypatch):
    monkeypatch.delenv("KANDEV_PROVIDER_KEY_ENVS", raising=False)

    allowed = provider_key_envs("KANDEV_PROVIDER_KEY_ENVS", DEFAULT_PROVIDER_KEY_ENVS)

    assert {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"} <= allowed
    assert not {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "KANDEV_DEMO_PASSWORD"} & allowed


def test_an_operator_lists_the_key_variables(monkeypatch):
    monkeypatch.setenv("KANDEV_PROVIDER_KEY_ENVS", "TEAM_PROXY_KEY, ANTHROPIC_API_KEY")

    allowed = provider_key_envs("KANDEV_PROVIDER_KEY_ENVS", DEFAULT_PROVIDER_KEY_ENVS)

    assert allowed == {"TEAM_PROXY_KEY", "ANTHROPIC_API_KEY"}


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("SECRET_KEY", "lists SECRET_KEY, one of this app's own settings"),
        ("ANTHROPIC_API_KEY,DATABASE_URL", "lists DATABASE_URL, one of this app's own settings"),
        ("KANDEV_DEMO_PASSWORD", "lists KANDEV_DEMO_PASSWORD, one of this app's own settings"),
        ("sk-ant-test-000", "lists 'sk-ant-test-000', which is not a variable name"),
    ],
)
def test_a_key_variable_list_naming_a_secret_or_no_variable_is_refused(monkeypatch, raw, why):
    monkeypatch.setenv("KANDEV_PROVIDER_KEY_ENVS", raw)

    with pytest.raises(ImproperlyConfigured, match=re.escape(f"KANDEV_PROVIDER_KEY_ENVS {why}")):
        provider_key_envs("KANDEV_PROVIDER_KEY_ENVS", DEFAULT_PROVIDER_KEY_ENVS)


def test_the_default_hosts_are_the_public_providers_and_loopback(monkeypatch):
    monkeypatch.delenv("KANDEV_PROVIDER_HOSTS", raising=False)

    rules = provider_hosts("KANDEV_PROVIDER_HOSTS", DEFAULT_PROVIDER_HOSTS).rules

    assert {rule.host for rule in rules} == {
        "api.anthropic.com",
        "api.openai.com",
        "generativelanguage.googleapis.com",  # Gemini CLI's default
        "localhost",
        "127.0.0.1",
        "::1",
    }


def test_an_operator_lists_the_hosts(monkeypatch):
    monkeypatch.setenv("KANDEV_PROVIDER_HOSTS", "api.anthropic.com,mock:8765")

    rules = provider_hosts("KANDEV_PROVIDER_HOSTS", DEFAULT_PROVIDER_HOSTS).rules

    assert rules == (HostRule("api.anthropic.com"), HostRule("mock", 8765))


def test_a_host_list_naming_a_url_is_refused(monkeypatch):
    monkeypatch.setenv("KANDEV_PROVIDER_HOSTS", "api.anthropic.com,https://127.0.0.1:4000")

    why = re.escape("KANDEV_PROVIDER_HOSTS: 'https://127.0.0.1:4000'")
    with pytest.raises(ImproperlyConfigured, match=why):
        provider_hosts("KANDEV_PROVIDER_HOSTS", DEFAULT_PROVIDER_HOSTS)


@pytest.mark.parametrize(
    ("name", "value"),
    [("KANDEV_PROVIDER_KEY_ENVS", "SECRET_KEY"), ("KANDEV_PROVIDER_HOSTS", "127.0.0.1:http")],
)
def test_a_bad_value_stops_start_up_and_names_the_variable(name, value):
    result = start_up(**{name: value})

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr
