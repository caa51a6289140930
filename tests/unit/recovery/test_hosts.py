"""The host allowlist: exact names and addresses, optional port, no wildcards, parsed as sent."""

from __future__ import annotations

import pytest

from recovery.hosts import HostAllowlist, HostRule

HOSTS = HostAllowlist.parse(["api.anthropic.com", "127.0.0.1", "[::1]", "localhost:8765", "Mock"])


def test_entries_are_parsed_into_lower_case_hosts_with_optional_ports():
    assert HOSTS.rules == (
        HostRule("api.anthropic.com"),
        HostRule("127.0.0.1"),
        HostRule("::1"),
        HostRule("localhost", 8765),
        HostRule("mock"),
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://api.anthropic.com",
        "https://API.Anthropic.com/v1/",
        "http://127.0.0.1:4000/v1",
        "http://[::1]:9000",
        "http://localhost:8765",
        "http://mock:8765",
    ],
)
def test_a_url_on_a_listed_host_may_be_called(url):
    assert HOSTS.refusal(url) is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        (
            "http://127.0.0.2:4000",
            "names host 127.0.0.2:4000, which is not an allowed provider host",
        ),
        ("http://localhost:8766", "names host localhost:8766, which is not"),
        ("https://api.anthropic.com.example.test", "names host api.anthropic.com.example.test:443"),
        ("http://127.1:4000", "names host 127.1:4000"),
        ("http://0x7f000001/", "names host 0x7f000001:80"),
        ("http://user:pass@127.0.0.1/", "must not carry a user name or password"),
        ("http://127.0.0.2\\@127.0.0.1/", "must not carry a user name or password"),
        ("ftp://127.0.0.1/", "must start with http:// or https://"),
        ("127.0.0.1:4000", "must start with http:// or https://"),
        ("", "must start with http:// or https://"),
        ("http:///v1", "has no host"),
        ("http://127.0.0.1:99999/", "has a port that is not a number from 1 to 65535"),
    ],
)
def test_anything_else_is_refused_with_the_reason(url, why):
    assert why in HOSTS.refusal(url)


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("https://api.openai.com", "list hosts, not URLs"),
        ("api.openai.com/v1", "list hosts, not URLs"),
        ("api openai", "list hosts, not URLs"),
        ("host:0", "port that is not a number"),
        ("host:http", "port that is not a number"),
        ("[::1", "is not a host or host:port"),
        ("a..b", "is not a host or host:port"),
        ("*.openai.com", "is not a host or host:port"),
    ],
)
def test_an_entry_that_is_not_a_host_is_refused_naming_it(entry, why):
    with pytest.raises(ValueError, match=why) as refused:
        HostAllowlist.parse([entry])
    assert repr(entry) in str(refused.value)


def test_an_empty_list_allows_nothing():
    assert "not an allowed provider host" in HostAllowlist.parse([]).refusal("http://127.0.0.1/")
