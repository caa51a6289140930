"""The typed environment helpers in kandev_web/settings.py fail loudly on bad values."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from kandev_web.settings import (
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    redis_urls,
)


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


@pytest.mark.parametrize(("raw", "expected"), [("true", True), ("YES", True), ("1", True),
                                               ("off", False), ("0", False), ("False", False)])
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
        "postgres", "postgres", "", ""
    )


def test_database_from_url_reads_a_tcp_url_with_an_encoded_password():
    config = database_from_url("postgres://kandev:p%40ss%2Fword@db.internal:5433/kandev_prod")
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db.internal", "5433", "kandev_prod")
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
