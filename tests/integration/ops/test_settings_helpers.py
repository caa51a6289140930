"""The typed environment helpers (kandev_web/env.py) and the services' URL readers
(kandev_web/service_urls.py) fail loudly on bad values."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from kandev_web.env import (
    env_absolute_path,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_matching,
    env_not_negative,
    env_parsed,
    env_positive,
    env_seconds,
    env_secret,
    env_whole,
    lockout_parameters,
)
from kandev_web.service_urls import database_from_url, redis_urls


def test_env_int_reads_a_whole_number(monkeypatch):
    monkeypatch.setenv("KANDEV_OPS_N", "42")
    assert env_int("KANDEV_OPS_N", 7) == 42


def test_env_int_falls_back_to_its_default_when_unset_or_empty(monkeypatch):
    monkeypatch.delenv("KANDEV_OPS_N", raising=False)
    assert env_int("KANDEV_OPS_N", 7) == 7
    monkeypatch.setenv("KANDEV_OPS_N", "")
    assert env_int("KANDEV_OPS_N", 7) == 7


@pytest.mark.parametrize("raw", ["abc", "1.5", "8000x"])
def test_env_int_refuses_what_is_not_a_whole_number(monkeypatch, raw):
    monkeypatch.setenv("KANDEV_OPS_N", raw)
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_N must be a whole number"):
        env_int("KANDEV_OPS_N", 7)


def test_env_float_reads_numbers_and_refuses_words(monkeypatch):
    monkeypatch.setenv("KANDEV_OPS_F", "0.25")
    assert env_float("KANDEV_OPS_F", 1.0) == 0.25
    monkeypatch.setenv("KANDEV_OPS_F", "soon")
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_F must be a number"):
        env_float("KANDEV_OPS_F", 1.0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("YES", True), ("1", True), ("off", False), ("0", False), ("False", False)],
)
def test_env_bool_understands_the_usual_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("KANDEV_OPS_B", raw)
    assert env_bool("KANDEV_OPS_B", not expected) is expected


def test_env_bool_refuses_anything_else(monkeypatch):
    monkeypatch.setenv("KANDEV_OPS_B", "maybe")
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_B must be true or false"):
        env_bool("KANDEV_OPS_B", False)


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch):
    monkeypatch.setenv("KANDEV_OPS_L", " a.example , ,b.example,")
    assert env_list("KANDEV_OPS_L", ["x"]) == ["a.example", "b.example"]
    monkeypatch.delenv("KANDEV_OPS_L")
    assert env_list("KANDEV_OPS_L", ["x"]) == ["x"]


def test_database_from_url_reads_a_unix_socket_url_as_pgserver_writes_it():
    config = database_from_url("postgresql://postgres:@/postgres?host=/srv/kandev/.kandev/postgres")
    assert config["HOST"] == "/srv/kandev/.kandev/postgres"
    assert (config["NAME"], config["USER"], config["PASSWORD"], config["PORT"]) == (
        "postgres",
        "postgres",
        "",
        "",
    )


def test_database_from_url_reads_a_tcp_url_with_an_encoded_password():
    config = database_from_url("postgres://kandev:p%40ss%2Fword@db.internal:5433/kandev_prod")
    assert (config["HOST"], config["PORT"], config["NAME"]) == (
        "db.internal",
        "5433",
        "kandev_prod",
    )
    assert (config["USER"], config["PASSWORD"]) == ("kandev", "p@ss/word")
    assert config["ENGINE"] == "django.db.backends.postgresql"


def test_database_from_url_refuses_other_databases():
    with pytest.raises(ImproperlyConfigured, match="postgresql://"):
        database_from_url("mysql://root@localhost/kandev")


def test_redis_urls_spell_a_unix_socket_for_each_client():
    urls = redis_urls("unix:///tmp/kandev/redis.socket?db=3")
    assert urls == {
        "client": "unix:///tmp/kandev/redis.socket?db=3",
        "celery": "redis+socket:///tmp/kandev/redis.socket?virtual_host=3",
        "channels": "unix:///tmp/kandev/redis.socket?db=3",
    }


def test_redis_urls_pass_a_tcp_url_through_unchanged():
    urls = redis_urls("redis://127.0.0.1:6379/5")
    assert set(urls.values()) == {"redis://127.0.0.1:6379/5"}


def test_redis_urls_refuse_other_schemes():
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL"):
        redis_urls("http://127.0.0.1:6379/0")


def test_env_whole_refuses_a_number_below_its_least(monkeypatch):
    monkeypatch.setenv("KANDEV_OPS_N", "0")
    assert env_whole("KANDEV_OPS_N", 3) == 0
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_N must be at least 1, got 0"):
        env_whole("KANDEV_OPS_N", 3, least=1)


@pytest.mark.parametrize("raw", ["0", "-1", "nan"])
def test_env_positive_refuses_zero_negatives_and_nan(monkeypatch, raw):
    monkeypatch.setenv("KANDEV_OPS_F", raw)
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_F must be positive"):
        env_positive("KANDEV_OPS_F", 1.0)


@pytest.mark.parametrize(("raw", "refused"), [("0", False), ("-0.5", True), ("nan", True)])
def test_env_not_negative_allows_zero_and_refuses_what_is_below_or_not_a_number(
    monkeypatch, raw, refused
):
    monkeypatch.setenv("KANDEV_OPS_F", raw)
    if refused:
        with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_F must not be negative"):
            env_not_negative("KANDEV_OPS_F", 1.0)
    else:
        assert env_not_negative("KANDEV_OPS_F", 1.0) == 0


@pytest.mark.parametrize("raw", ["0", "3601", "inf"])
def test_env_seconds_refuses_no_wait_and_waits_over_an_hour_naming_the_value(monkeypatch, raw):
    monkeypatch.setenv("KANDEV_OPS_S", raw)
    with pytest.raises(
        ImproperlyConfigured, match=f"KANDEV_OPS_S must be seconds between 0 and 3600, got '{raw}'"
    ):
        env_seconds("KANDEV_OPS_S", 30.0)


def test_env_choice_and_env_matching_name_what_they_accept(monkeypatch):
    monkeypatch.setenv("KANDEV_OPS_C", "xml")
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_C must be json or plain, got 'xml'"):
        env_choice("KANDEV_OPS_C", "json", ("json", "plain"))
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_C must be two digits, got 'xml'"):
        env_matching("KANDEV_OPS_C", "00", pattern=r"[0-9]{2}", described="two digits")
    monkeypatch.delenv("KANDEV_OPS_C")
    assert env_choice("KANDEV_OPS_C", "json", ("json", "plain")) == "json"


def test_env_absolute_path_refuses_a_name_left_to_path_lookup(monkeypatch):
    monkeypatch.setenv("KANDEV_OPS_P", "node")
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_P must be an absolute path to node"):
        env_absolute_path("KANDEV_OPS_P", "/usr/bin/node", of="node")


def test_env_secret_may_be_unset_but_never_short(monkeypatch):
    monkeypatch.delenv("KANDEV_OPS_T", raising=False)
    assert env_secret("KANDEV_OPS_T", least_chars=24) == ""
    monkeypatch.setenv("KANDEV_OPS_T", "short")
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_T must be at least 24 characters"):
        env_secret("KANDEV_OPS_T", least_chars=24)


def test_env_parsed_turns_a_settings_objects_value_error_into_a_start_up_error():
    def parse(environ):
        raise ValueError("KANDEV_OPS_X must be a list of seconds")

    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_X must be a list of seconds"):
        env_parsed(parse)


def test_lockout_parameters_read_alternatives_of_joined_fields(monkeypatch):
    monkeypatch.setenv("KANDEV_OPS_L", "username+ip_address, user_agent")
    assert lockout_parameters("KANDEV_OPS_L", "username") == [
        ["username", "ip_address"],
        "user_agent",
    ]
    monkeypatch.setenv("KANDEV_OPS_L", "username+cookie")
    with pytest.raises(ImproperlyConfigured, match="KANDEV_OPS_L names 'username\\+cookie'"):
        lockout_parameters("KANDEV_OPS_L", "username")
