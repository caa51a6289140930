"""What a secret looks like: the credential formats redaction removes and the value-shape check
that tells a literal secret from code.

Each format is a pattern and, where the pattern alone would also match ordinary text, a check of
the matched value. Source code is not a secret: an assignment such as ``key: str``,
``token = lexer.next()`` or ``password = input("pw: ")`` is kept, because only literal,
high-entropy values (``is_secret_value``) count. Formats and value shapes were chosen after
reading gitleaks' rule set and detect-secrets' keyword and high-entropy plugins; the patterns are
our own. The pattern pieces named in capitals are shared with the segmenter in recovery/redact.py,
which must never cut a text where one of these constructs could continue.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

# Encoded forms of the few characters the patterns need around a value: a space, a quote, a
# separator. JSON escapes a quote as \" (once per level of nesting); URL-encoding as %22.
SPACE = r"(?:[ \t]|%20|\+)"
QUOTE = r"(?:\\{0,3}[\"']|%22|%27)"
_SEP = SPACE + r"*(?:[:=]|%3[AaDd])" + SPACE + r"*"
# Not glued to a word, but a URL-encoded byte (%22, %3D) may come right before.
NOT_BEFORE = r"(?:(?<![A-Za-z0-9])|(?<=%[0-9A-Fa-f]{2}))"
_NOT_AFTER = r"(?![A-Za-z0-9])"


def char_class(ch: str) -> str:
    """digit, lower, upper or symbol: how many of these a value mixes is part of its shape."""
    if ch.isdigit():
        return "digit"
    if ch.islower():
        return "lower"
    if ch.isupper():
        return "upper"
    return "symbol"


@dataclass(frozen=True, slots=True)
class SecretFormat:
    name: str
    pattern: re.Pattern[str]
    keep: int = 0  # leading groups kept (a header name, a scheme), the rest becomes the marker
    # Value-shape check on the last group, given the kept prefix (group 1) too.
    check: Callable[[str, str], bool] | None = None


def _basic_decodes_to_a_pair(value: str) -> bool:
    try:
        decoded = base64.b64decode(unquote(value), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(c / len(value) * math.log2(c / len(value)) for c in counts.values())


_PLACEHOLDER = re.compile(
    r"(?i)(?:x+|\*+|\.+|-+|_+|<[^>]*>|\$\{?\w+\}?|%\(\w+\)s|"
    r"(?:your|my|the|some|example|dummy|fake|test|sample|change|replace)[\w-]*|"
    r"password|passwd|secret|changeit)"
)
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_$][\w$]*(?:[.:][A-Za-z_$][\w$]*)*")


def is_secret_value(value: str, *, quoted: bool = False) -> bool:
    """A literal that looks random: not an identifier, a code expression or a placeholder.

    Unquoted, ``name_2`` or ``utf8`` is an identifier; quoted, it is a literal and only its shape
    decides.
    """
    value = unquote(value) if "%" in value else value
    if not 10 <= len(value) <= 512 or _PLACEHOLDER.fullmatch(value):
        return False  # under 10 characters: rsa:3072, utf-8-sig, ordinary settings values
    # Separators make a setting (rsa:3072, en_US.UTF-8), not randomness.
    classes = {char_class(ch) for ch in value if ch not in ":._-/"}
    if "digit" not in classes and not (len(value) >= 20 and _entropy(value) >= 4.0):
        return False  # words, identifiers and paths (lexer.next, America/New_York) carry no digits
    if _IDENTIFIER_PATH.fullmatch(value) and not (
        len(value) >= (12 if quoted else 16) and {"lower", "upper", "digit"} <= classes
    ):
        return False  # name_2, utf8, self.key1, ns0:value: identifiers with a digit
    if value.isdigit() or re.fullmatch(r"[\d.:/+\-]+", value):
        return False  # numbers, versions, dates, ports
    return len(classes) >= 3 or _entropy(value) >= 3.0


# The value of a keyed assignment or a header: runs to a quote, whitespace or code punctuation;
# URL-encoded separators (%20 %22 %26 %27 %2C %3B %0A) end it too.
_VALUE = (
    r"((?:(?!%(?:0[AD]|2[0267C]|3B|5[BD]|7[BD]))[^\s\"'`\\,;&(){}\[\]<>|…]){8,512}+)"
    r"(?!\(|\[(?!REDACTED\]))"  # a call or an index is code; a value glued to a marker is not
)
_SECRET_NAMES = (
    r"api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret(?:[_-]?access)?(?:[_-]?key)?"
    r"|client[_-]?secret|private[_-]?key|password|passwd|passphrase|pwd|token|access[_-]?token"
    r"|refresh[_-]?token|id[_-]?token|auth[_-]?token|session[_-]?token|credentials?|key"
    r"|authorization|secret[_-]?token|signing[_-]?key"
)
SECRET_NAME = NOT_BEFORE + r"((?:[\w-]*[_-])?(?:" + _SECRET_NAMES + r"))(?![A-Za-z0-9])"
AUTH_SCHEME = r"(?:Bearer|Basic|Token|Bot|Key)"


def _pem_pattern() -> re.Pattern[str]:
    # Header and footer in plain, JSON-escaped (\n) and URL-encoded (%20, %0A) forms; a block whose
    # footer never came (cut output) is removed to the end of the segment.
    header = (
        r"-----BEGIN" + SPACE + r"(?:[A-Z0-9]+" + SPACE + r")*PRIVATE" + SPACE + r"KEY(?:" + SPACE
    )
    header += r"BLOCK)?-----"
    footer = (
        r"-----END" + SPACE + r"(?:[A-Z0-9]+" + SPACE + r")*PRIVATE" + SPACE + r"KEY(?:" + SPACE
    )
    footer += r"BLOCK)?-----"
    return re.compile(header + r"[\s\S]*?(?:" + footer + r"|$)")


SECRET_FORMATS: tuple[SecretFormat, ...] = (
    SecretFormat(
        "pem_private_key",
        _pem_pattern(),
        # A key has a base64 body of 32+ characters; a header over a few letters is a placeholder.
        check=lambda v, _: re.search(r"[A-Za-z0-9+/]{32,}", unquote(v)) is not None,
    ),
    SecretFormat(
        "anthropic",
        # The sk-ant- prefix is unambiguous, so even a short test key counts.
        re.compile(NOT_BEFORE + r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    ),
    SecretFormat(
        "openai",
        re.compile(NOT_BEFORE + r"sk-(?:proj-|svcacct-|admin-|or-v1-|or-)?[A-Za-z0-9_\-]{20,}"),
        check=lambda v, _: any(ch.isdigit() for ch in v),
    ),
    SecretFormat(
        "aws_access_key_id",
        re.compile(NOT_BEFORE + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}" + _NOT_AFTER),
    ),
    SecretFormat(
        "aws_secret_access_key",
        # 40 characters of base64 are a hash as often as a key, so only in an assignment.
        re.compile(
            r"(?i)"
            + NOT_BEFORE
            + r"((?:aws_?)?secret_?access_?key"
            + QUOTE
            + r"?"
            + _SEP
            + QUOTE
            + r"?)"
            r"([A-Za-z0-9/+]{40}|(?:[A-Za-z0-9]|%2[BF]){40,60})" + _NOT_AFTER
        ),
        keep=1,
    ),
    SecretFormat(
        "github",
        re.compile(NOT_BEFORE + r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_\w{40,})"),
    ),
    SecretFormat(
        "google_api_key",
        re.compile(NOT_BEFORE + r"AIza[0-9A-Za-z_\-]{35}" + _NOT_AFTER),
    ),
    SecretFormat(
        "slack",
        re.compile(NOT_BEFORE + r"xox[abposre]-[0-9A-Za-z\-]{10,}"),
    ),
    SecretFormat(
        "stripe",
        re.compile(NOT_BEFORE + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
    ),
    SecretFormat(
        "hugging_face",
        re.compile(NOT_BEFORE + r"hf_[A-Za-z0-9]{30,}"),
    ),
    SecretFormat(
        "groq",
        re.compile(NOT_BEFORE + r"gsk_[A-Za-z0-9]{40,}"),
    ),
    SecretFormat(
        "xai",
        re.compile(NOT_BEFORE + r"xai-[A-Za-z0-9]{40,}"),
    ),
    SecretFormat(
        "jwt",
        re.compile(NOT_BEFORE + r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*"),
    ),
    SecretFormat(
        "basic_auth",
        re.compile(
            NOT_BEFORE
            + r"(Basic"
            + SPACE
            + r"+)((?:[A-Za-z0-9+/]|%2[BF]){8,}(?:=|%3D){0,2})"
            + _NOT_AFTER
        ),
        keep=1,
        check=lambda v, _: _basic_decodes_to_a_pair(v),
    ),
    SecretFormat(
        "bearer_token",
        re.compile(
            r"(?i)" + NOT_BEFORE + r"((?:Bearer|Token|Bot)" + SPACE + r"+)"
            r"((?:[A-Za-z0-9\-._~+/]|%2[BF]){16,}+(?:=|%3D)*)(?![(\[])"
        ),
        keep=1,
        check=lambda v, _: is_secret_value(v),
    ),
    SecretFormat(
        "url_userinfo",
        # scheme://user:password@ in any URL (postgres://, redis://, https://), also URL-encoded.
        re.compile(
            r"(?i)(?:(?<![A-Za-z0-9+.\-])|(?<=%[0-9A-F]{2}))"
            r"([a-z][a-z0-9+.\-]*(?:://|%3A%2F%2F)[^/\s@:\"'<>%]*(?::|%3A))"
            r"((?:[^/\s@\"'<>%]|%(?!40)[0-9A-F]{2})+)(?=@|%40)"
        ),
        keep=1,
        # Short ones are examples in docs and tests (user:pass@, evil:thing@).
        check=lambda v, _: len(unquote(v)) >= 8 and not _PLACEHOLDER.fullmatch(unquote(v)),
    ),
    SecretFormat(
        "keyed_assignment",
        # NAME (prefixed or not: OPENAI_API_KEY, x-api-key), optionally quoted, = or :, an optional
        # auth scheme, then a literal value that looks random (``is_secret_value``).
        re.compile(rf"(?i)({SECRET_NAME}{QUOTE}?{_SEP}(?:{AUTH_SCHEME}{SPACE}+)?{QUOTE}?){_VALUE}"),
        keep=1,
        check=lambda v, prefix: is_secret_value(
            v, quoted=re.search(QUOTE + "$", prefix) is not None
        ),
    ),
)
