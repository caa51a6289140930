"""What an anonymous client's suspicious requests cost, through the real ASGI app on a real Daphne
over HTTP: a 400 (a static path climbing out of its directory: a 404, it names no collected
file), no file content, no traceback in the log (one short warning line), and no query-string
value in the access log. Static answers, served before any middleware, carry the
Content-Security-Policy too and keep their own caching."""

from __future__ import annotations

import gzip
import http.client
import re
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from django.conf import settings
from django.contrib.staticfiles.storage import staticfiles_storage

from devtools.eventually import eventually
from tests.integration.live_daphne import live_daphne

pytestmark = [pytest.mark.timeout(180)]


class Daphne:
    def __init__(self, base_url: str, log: Path) -> None:
        self.base_url = base_url
        self.port = int(base_url.rsplit(":", 1)[1])
        self.log = log

    def get(self, path: str, *, host: str = "127.0.0.1") -> tuple[int, bytes]:
        """GET ``path`` exactly as written (http.client neither normalises nor re-quotes it)."""
        status, _, body = self.get_with_headers(path, host=host)
        return status, body

    def get_with_headers(
        self, path: str, *, host: str = "127.0.0.1"
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.putrequest("GET", path, skip_host=True)
            connection.putheader("Host", f"{host}:{self.port}")
            connection.endheaders()
            answer = connection.getresponse()
            return answer.status, answer.headers, answer.read()
        finally:
            connection.close()

    def mark(self) -> int:
        """Where the log ends now: what a request writes from here is its own."""
        return self.log.stat().st_size

    def logged_since(self, mark: int, *, until: str) -> str:
        """The log written since ``mark``, once it holds ``until`` (the request's access line)."""

        def text() -> str:
            with self.log.open("rb") as handle:
                handle.seek(mark)
                return handle.read().decode("utf-8", "replace")

        eventually(lambda: until in text(), timeout=30, what=f"log line {until}")
        return text()


@pytest.fixture(scope="module")
def daphne(django_db_setup, tmp_path_factory) -> Iterator[Daphne]:
    log = tmp_path_factory.mktemp("daphne") / "daphne.log"
    # Unbuffered: the access log is written to stdout, which is a file here.
    with live_daphne(env={"PYTHONUNBUFFERED": "1"}, log_path=log) as base_url:
        yield Daphne(base_url, log)


@pytest.mark.parametrize(
    "path",
    [
        "/static/../kandev_web/settings.py",
        "/static/%2e%2e/kandev_web/settings.py",
        "/static/..%252fkandev_web%252fsettings.py",
        "/static/css/../../../../../../etc/passwd",
    ],
)
def test_a_static_path_climbing_out_of_its_directory_is_not_found_without_a_traceback(daphne, path):
    mark = daphne.mark()
    status, body = daphne.get(path)

    assert status == 404
    assert b"ALLOWED_HOSTS" not in body and b"root:" not in body
    log = daphne.logged_since(mark, until=path)
    assert "Traceback" not in log
    assert "Exception inside application" not in log


def test_a_view_refusing_a_suspicious_request_answers_400_with_one_short_warning(daphne):
    mark = daphne.mark()
    status, _ = daphne.get("/accounts/login/?from=evil", host="evil.example")

    assert status == 400
    log = daphne.logged_since(mark, until="/accounts/login/?from=")
    assert "Traceback" not in log
    refused = [line for line in log.splitlines() if "evil.example" in line]
    assert len(refused) == 1
    assert "WARNING" in refused[0] and "ERROR" not in refused[0]


async def test_query_string_values_never_reach_the_access_log(daphne):
    mark = daphne.mark()
    status, _ = daphne.get("/accounts/login/?token=secret123&next=/board/&flag")
    async with aiohttp.ClientSession() as client:
        # Refused (no Origin, no login), but its request line is logged too.
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await client.ws_connect(f"{daphne.base_url}/ws/sessions/1/?token=wssecret456")

    assert status == 200
    log = daphne.logged_since(mark, until="/ws/sessions/1/")
    log = daphne.logged_since(mark, until="/accounts/login/?token=")
    assert "/accounts/login/?token=[REDACTED]&next=[REDACTED]&[REDACTED]" in log
    assert "secret123" not in log
    assert "wssecret456" not in log


@pytest.mark.parametrize("path", ["/static/js/live.js", "/static/../kandev_web/settings.py"])
def test_static_answers_carry_the_policy_and_keep_their_own_caching(daphne, path):
    _, headers, _ = daphne.get_with_headers(path)

    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers.get("Cache-Control") != "no-store"


def test_a_hashed_static_file_is_cached_for_good_and_its_plain_name_briefly(daphne):
    hashed = staticfiles_storage.url("js/live.js")

    status, headers, body = daphne.get_with_headers(hashed)
    plain_status, plain_headers, plain_body = daphne.get_with_headers("/static/js/live.js")

    assert re.fullmatch(r"/static/js/live\.[0-9a-f]{12}\.js", hashed)
    assert status == 200 and body == plain_body
    assert headers["Cache-Control"] == "max-age=315360000, public, immutable"
    assert plain_status == 200 and plain_headers["Cache-Control"] == "max-age=60, public"


def test_a_static_file_is_sent_compressed_to_a_client_that_accepts_it(daphne):
    connection = http.client.HTTPConnection("127.0.0.1", daphne.port, timeout=30)
    try:
        connection.request(
            "GET", staticfiles_storage.url("js/live.js"), headers={"Accept-Encoding": "gzip"}
        )
        answer = connection.getresponse()
        body = answer.read()
    finally:
        connection.close()

    assert answer.status == 200 and answer.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(body) == Path(settings.STATIC_ROOT, "js", "live.js").read_bytes()
