"""Format-valid fake secrets for the redaction corpus (tests and benchmarks/bench_redact.py),
one generator for each format of recovery/secret_formats.py, never a real secret.

A generator takes the injected random source and returns the text as written and the part of it
that must not survive redaction.
"""

from __future__ import annotations

import base64
import string
from collections.abc import Callable
from random import Random

from recovery.secret_formats import char_class

Fake = Callable[[Random], tuple[str, str]]


def _alnum(rng: Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    # A fake must look random to the value-shape check: at least one digit, lower and upper.
    while True:
        body = "".join(rng.choice(alphabet) for _ in range(n))
        if len({char_class(ch) for ch in body}) >= min(3, len({char_class(a) for a in alphabet})):
            return body


def _b64url(rng: Random, n: int) -> str:
    return _alnum(rng, n, string.ascii_letters + string.digits + "-_")


def _whole(make: Callable[[Random], str]) -> Fake:
    def fake(rng: Random) -> tuple[str, str]:
        token = make(rng)
        return token, token

    return fake


def _in_context(contexts: tuple[str, ...], make: Callable[[Random], str]) -> Fake:
    def fake(rng: Random) -> tuple[str, str]:
        value = make(rng)
        return rng.choice(contexts).format(value), value

    return fake


def _fake_jwt(rng: Random) -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = base64.urlsafe_b64encode(
        f'{{"sub":"{_alnum(rng, 10)}","iat":{rng.randrange(10**9, 2 * 10**9)}}}'.encode()
    )
    return f"{header}.{claims.decode().rstrip('=')}.{_b64url(rng, 43)}"


def _fake_pem(rng: Random) -> tuple[str, str]:
    body = base64.b64encode(rng.randbytes(96)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    kind = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    block = f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"
    return block, lines[0]


def _fake_basic(rng: Random) -> tuple[str, str]:
    pair = f"{_alnum(rng, 6, string.ascii_lowercase)}:{_alnum(rng, 16)}".encode()
    value = base64.b64encode(pair).decode()
    return rng.choice(["Authorization: Basic {}", "Basic {}"]).format(value), value


SECRET_FAKES: dict[str, Fake] = {
    "pem_private_key": _fake_pem,
    "anthropic": _whole(lambda rng: f"sk-ant-api03-{_b64url(rng, 93)}AA"),
    "openai": _whole(lambda rng: rng.choice(["sk-proj-", "sk-svcacct-", "sk-"]) + _b64url(rng, 48)),
    "aws_access_key_id": _whole(
        lambda rng: "AKIA" + _alnum(rng, 16, string.ascii_uppercase + string.digits)
    ),
    "aws_secret_access_key": _in_context(
        ("aws_secret_access_key = {}", 'AWS_SECRET_ACCESS_KEY="{}"'),
        lambda rng: _alnum(rng, 40, string.ascii_letters + string.digits + "/+"),
    ),
    "github": _whole(
        lambda rng: rng.choice(
            [
                f"ghp_{_alnum(rng, 36)}",
                f"gho_{_alnum(rng, 36)}",
                f"github_pat_11A{_alnum(rng, 19)}_{_alnum(rng, 59)}",
            ]
        )
    ),
    "google_api_key": _whole(lambda rng: "AIza" + _b64url(rng, 35)),
    "slack": _whole(
        lambda rng: f"xoxb-{rng.randrange(10**12)}-{rng.randrange(10**12)}-{_alnum(rng, 24)}"
    ),
    "stripe": _whole(lambda rng: "sk_live_" + _alnum(rng, 99)),
    "hugging_face": _whole(lambda rng: "hf_" + _alnum(rng, 34)),
    "groq": _whole(lambda rng: "gsk_" + _alnum(rng, 52)),
    "xai": _whole(lambda rng: "xai-" + _alnum(rng, 80)),
    "jwt": _whole(_fake_jwt),
    "basic_auth": _fake_basic,
    "bearer_token": _in_context(
        ("Bearer {}", "Authorization: Bearer {}"), lambda rng: _b64url(rng, 40)
    ),
    "url_userinfo": _in_context(
        ("postgresql://admin:{}@db.internal:5432/kandev", "https://bot:{}@git.example.com/r.git"),
        lambda rng: _alnum(rng, 20),
    ),
    "keyed_assignment": _in_context(
        ("api_key={}", "password: {}", '"client_secret": "{}"', "X-Api-Key: {}", "token='{}'"),
        lambda rng: _alnum(rng, 24, string.ascii_letters + string.digits + "!#*-_"),
    ),
}
