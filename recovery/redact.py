"""Two redaction tiers, both idempotent (redacting twice changes nothing more).

- Credential tier, for user text and agent output: removes the secret formats in
  ``SECRET_FORMATS`` (one table: each format, its pattern and a generator of fake examples for the
  measured corpus) and the values the caller configured (``known_values``), in plain, JSON-escaped
  and URL-encoded text, and leaves everything else as written. Source code is not a secret: an
  assignment such as ``key: str``, ``token = lexer.next()`` or ``password = input("pw: ")`` is
  kept, because only literal, high-entropy values (``_is_secret_value``) count.
- Diagnostic tier, for provider output before it is stored, logged or shown: the credential
  tier plus URL reduction (scheme and host only), internal ids, absolute paths and long opaque
  runs; then truncation on a UTF-8 boundary. Redaction happens first, so truncation can never
  keep the first half of a secret whose second half made it recognisable.

Streaming: ``StreamRedactor`` redacts text that arrives in chunks, with carry-over and bounded
memory. Text is cut into segments at whitespace that cannot be inside a secret construct (see
``_segment_end``); each segment is released, redacted, as soon as its end is known. The whole-text
functions run the same segmenter, so any split of a text gives exactly the whole text's result.

Every replacement is a bracketed marker that no pattern matches, which is what makes both tiers
idempotent. Formats and value shapes were chosen after reading gitleaks' rule set and
detect-secrets' keyword and high-entropy plugins; the patterns are our own.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from random import Random
from urllib.parse import quote, unquote

REDACTED = "[REDACTED]"
TRUNCATION_MARK = "…"

_Sub = tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]

# Encoded forms of the few characters the patterns need around a value: a space, a quote, a
# separator. JSON escapes a quote as \" (once per level of nesting); URL-encoding as %22.
_SP = r"(?:[ \t]|%20|\+)"
_Q = r"(?:\\{0,3}[\"']|%22|%27)"
_SEP = _SP + r"*(?:[:=]|%3[AaDd])" + _SP + r"*"
# Not glued to a word, but a URL-encoded byte (%22, %3D) may come right before.
_NOT_BEFORE = r"(?:(?<![A-Za-z0-9])|(?<=%[0-9A-Fa-f]{2}))"
_NOT_AFTER = r"(?![A-Za-z0-9])"


def _alnum(rng: Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    # A fake must look random to the value-shape check: at least one digit, lower and upper.
    while True:
        body = "".join(rng.choice(alphabet) for _ in range(n))
        if len({_char_class(ch) for ch in body}) >= min(3, len({_char_class(a) for a in alphabet})):
            return body


def _char_class(ch: str) -> str:
    if ch.isdigit():
        return "digit"
    if ch.islower():
        return "lower"
    if ch.isupper():
        return "upper"
    return "symbol"


def _b64url(rng: Random, n: int) -> str:
    return _alnum(rng, n, string.ascii_letters + string.digits + "-_")


def _whole(make: Callable[[Random], str]) -> Callable[[Random], tuple[str, str]]:
    def fake(rng: Random) -> tuple[str, str]:
        token = make(rng)
        return token, token

    return fake


def _in_context(
    contexts: tuple[str, ...], make: Callable[[Random], str]
) -> Callable[[Random], tuple[str, str]]:
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


@dataclass(frozen=True, slots=True)
class SecretFormat:
    name: str
    pattern: re.Pattern[str]
    # A format-valid fake for the measured corpus, never a real one: (text as written, the part
    # of it that must not survive).
    fake: Callable[[Random], tuple[str, str]]
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


def _is_secret_value(value: str, *, quoted: bool = False) -> bool:
    """A literal that looks random: not an identifier, a code expression or a placeholder.

    Unquoted, ``name_2`` or ``utf8`` is an identifier; quoted, it is a literal and only its shape
    decides.
    """
    value = unquote(value) if "%" in value else value
    if not 10 <= len(value) <= 512 or _PLACEHOLDER.fullmatch(value):
        return False  # under 10 characters: rsa:3072, utf-8-sig, ordinary settings values
    # Separators make a setting (rsa:3072, en_US.UTF-8), not randomness.
    classes = {_char_class(ch) for ch in value if ch not in ":._-/"}
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
_NAME = _NOT_BEFORE + r"((?:[\w-]*[_-])?(?:" + _SECRET_NAMES + r"))(?![A-Za-z0-9])"
_SCHEMES = r"(?:Bearer|Basic|Token|Bot|Key)"


def _pem_pattern() -> re.Pattern[str]:
    # Header and footer in plain, JSON-escaped (\n) and URL-encoded (%20, %0A) forms; a block whose
    # footer never came (cut output) is removed to the end of the segment.
    header = r"-----BEGIN" + _SP + r"(?:[A-Z0-9]+" + _SP + r")*PRIVATE" + _SP + r"KEY(?:" + _SP
    header += r"BLOCK)?-----"
    footer = r"-----END" + _SP + r"(?:[A-Z0-9]+" + _SP + r")*PRIVATE" + _SP + r"KEY(?:" + _SP
    footer += r"BLOCK)?-----"
    return re.compile(header + r"[\s\S]*?(?:" + footer + r"|$)")


SECRET_FORMATS: tuple[SecretFormat, ...] = (
    SecretFormat(
        "pem_private_key",
        _pem_pattern(),
        _fake_pem,
        # A key has a base64 body; "-----BEGIN PRIVATE KEY-----\nXXXX" in a test is a placeholder.
        check=lambda v, _: re.search(r"[A-Za-z0-9+/]{32,}", unquote(v)) is not None,
    ),
    SecretFormat(
        "anthropic",
        # The sk-ant- prefix is unambiguous, so even a short test key counts.
        re.compile(_NOT_BEFORE + r"sk-ant-[A-Za-z0-9_\-]{8,}"),
        _whole(lambda rng: f"sk-ant-api03-{_b64url(rng, 93)}AA"),
    ),
    SecretFormat(
        "openai",
        re.compile(_NOT_BEFORE + r"sk-(?:proj-|svcacct-|admin-|or-v1-|or-)?[A-Za-z0-9_\-]{20,}"),
        _whole(lambda rng: rng.choice(["sk-proj-", "sk-svcacct-", "sk-"]) + _b64url(rng, 48)),
        check=lambda v, _: any(ch.isdigit() for ch in v),
    ),
    SecretFormat(
        "aws_access_key_id",
        re.compile(_NOT_BEFORE + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}" + _NOT_AFTER),
        _whole(lambda rng: "AKIA" + _alnum(rng, 16, string.ascii_uppercase + string.digits)),
    ),
    SecretFormat(
        "aws_secret_access_key",
        # 40 characters of base64 are a hash as often as a key, so only in an assignment.
        re.compile(
            r"(?i)" + _NOT_BEFORE + r"((?:aws_?)?secret_?access_?key" + _Q + r"?" + _SEP + _Q + r"?)"
            r"([A-Za-z0-9/+]{40}|(?:[A-Za-z0-9]|%2[BF]){40,60})" + _NOT_AFTER
        ),
        _in_context(
            ("aws_secret_access_key = {}", 'AWS_SECRET_ACCESS_KEY="{}"'),
            lambda rng: _alnum(rng, 40, string.ascii_letters + string.digits + "/+"),
        ),
        keep=1,
    ),
    SecretFormat(
        "github",
        re.compile(_NOT_BEFORE + r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_\w{40,})"),
        _whole(
            lambda rng: rng.choice(
                [
                    f"ghp_{_alnum(rng, 36)}",
                    f"gho_{_alnum(rng, 36)}",
                    f"github_pat_11A{_alnum(rng, 19)}_{_alnum(rng, 59)}",
                ]
            )
        ),
    ),
    SecretFormat(
        "google_api_key",
        re.compile(_NOT_BEFORE + r"AIza[0-9A-Za-z_\-]{35}" + _NOT_AFTER),
        _whole(lambda rng: "AIza" + _b64url(rng, 35)),
    ),
    SecretFormat(
        "slack",
        re.compile(_NOT_BEFORE + r"xox[abposre]-[0-9A-Za-z\-]{10,}"),
        _whole(lambda rng: f"xoxb-{rng.randrange(10**12)}-{rng.randrange(10**12)}-{_alnum(rng, 24)}"),
    ),
    SecretFormat(
        "stripe",
        re.compile(_NOT_BEFORE + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
        _whole(lambda rng: "sk_live_" + _alnum(rng, 99)),
    ),
    SecretFormat(
        "hugging_face",
        re.compile(_NOT_BEFORE + r"hf_[A-Za-z0-9]{30,}"),
        _whole(lambda rng: "hf_" + _alnum(rng, 34)),
    ),
    SecretFormat(
        "groq",
        re.compile(_NOT_BEFORE + r"gsk_[A-Za-z0-9]{40,}"),
        _whole(lambda rng: "gsk_" + _alnum(rng, 52)),
    ),
    SecretFormat(
        "xai",
        re.compile(_NOT_BEFORE + r"xai-[A-Za-z0-9]{40,}"),
        _whole(lambda rng: "xai-" + _alnum(rng, 80)),
    ),
    SecretFormat(
        "jwt",
        re.compile(_NOT_BEFORE + r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*"),
        _whole(_fake_jwt),
    ),
    SecretFormat(
        "basic_auth",
        re.compile(_NOT_BEFORE + r"(Basic" + _SP + r"+)((?:[A-Za-z0-9+/]|%2[BF]){8,}(?:=|%3D){0,2})" + _NOT_AFTER),
        _fake_basic,
        keep=1,
        check=lambda v, _: _basic_decodes_to_a_pair(v),
    ),
    SecretFormat(
        "bearer_token",
        re.compile(
            r"(?i)" + _NOT_BEFORE + r"((?:Bearer|Token|Bot)" + _SP + r"+)"
            r"((?:[A-Za-z0-9\-._~+/]|%2[BF]){16,}+(?:=|%3D)*)(?![(\[])"
        ),
        _in_context(("Bearer {}", "Authorization: Bearer {}"), lambda rng: _b64url(rng, 40)),
        keep=1,
        check=lambda v, _: _is_secret_value(v),
    ),
    SecretFormat(
        "url_userinfo",
        # scheme://user:password@ in any URL (postgres://, redis://, https://), also URL-encoded.
        re.compile(
            r"(?i)(?:(?<![A-Za-z0-9+.\-])|(?<=%[0-9A-F]{2}))([a-z][a-z0-9+.\-]*(?:://|%3A%2F%2F)[^/\s@:\"'<>%]*(?::|%3A))"
            r"((?:[^/\s@\"'<>%]|%(?!40)[0-9A-F]{2})+)(?=@|%40)"
        ),
        _in_context(
            ("postgresql://admin:{}@db.internal:5432/kandev", "https://bot:{}@git.example.com/r.git"),
            lambda rng: _alnum(rng, 20),
        ),
        keep=1,
        # Short ones are examples in docs and tests (user:pass@, evil:thing@).
        check=lambda v, _: len(unquote(v)) >= 8 and not _PLACEHOLDER.fullmatch(unquote(v)),
    ),
    SecretFormat(
        "keyed_assignment",
        # NAME (prefixed or not: OPENAI_API_KEY, x-api-key), optionally quoted, = or :, an optional
        # auth scheme, then a literal value that looks random (``_is_secret_value``).
        re.compile(
            r"(?i)(" + _NAME + _Q + r"?" + _SEP + r"(?:" + _SCHEMES + _SP + r"+)?" + _Q + r"?)"
            + _VALUE
        ),
        _in_context(
            ("api_key={}", "password: {}", '"client_secret": "{}"', "X-Api-Key: {}", "token='{}'"),
            lambda rng: _alnum(rng, 24, string.ascii_letters + string.digits + "!#*-_"),
        ),
        keep=1,
        check=lambda v, prefix: _is_secret_value(v, quoted=re.search(_Q + "$", prefix) is not None),
    ),
)


def _replacement(fmt: SecretFormat) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        value, prefix = match.group(match.lastindex or 0), match.group(1) if match.lastindex else ""
        if fmt.check is not None and not fmt.check(value, prefix or ""):
            return match.group(0)
        kept = "".join(match.group(i) or "" for i in range(1, fmt.keep + 1))
        return kept + REDACTED

    return replace


_CREDENTIAL_SUBS: tuple[_Sub, ...] = tuple((f.pattern, _replacement(f)) for f in SECRET_FORMATS)


def _known_value_forms(values: Iterable[str]) -> tuple[str, ...]:
    # Short values would match ordinary words; the longest first, so a value containing another
    # is replaced whole. The worker's own key values (``worker_values_set``) are always included.
    forms: set[str] = set(_WORKER_FORMS)
    for value in values:
        if len(value) < 8:
            continue
        forms.update({value, quote(value, safe=""), value.replace("\\", "\\\\").replace('"', '\\"')})
    return tuple(sorted(forms, key=len, reverse=True))


_WORKER_FORMS: frozenset[str] = frozenset()


def worker_values_set(values: Iterable[str]) -> None:
    """The values of the provider keys configured for this process (the app passes the variables
    named by KANDEV_PROVIDER_KEY_ENVS at start-up): every redaction in the process removes them,
    in every form, whatever their shape, on every path (output, errors, logs, records).

    A process-wide fact set once, like the environment it comes from; calling again replaces it.
    """
    global _WORKER_FORMS
    _WORKER_FORMS = frozenset()
    _WORKER_FORMS = frozenset(_known_value_forms(values))


# ---------------------------------------------------------------------------------------------
# Segmentation: where a text may be cut without cutting a secret construct.

SEGMENT_LIMIT = 4096  # a segment without a safe cut is forced to end here (bounded memory)
PEM_SEGMENT_LIMIT = 16384  # a private key block is longer than any other secret
_WHITESPACE_RUN = re.compile(r"\s+")
_CONNECTOR_TOKEN = re.compile(
    r"(?i).*(?:[:=\"'\\]|%(?:3[AD]|2[027])|" + _NAME + _Q + r"?|" + _NOT_BEFORE + _SCHEMES
    + r"|-----BEGIN)"
)
_PEM_OPEN = re.compile(
    r"-----BEGIN(?!" + _SP + r"(?:CERTIFICATE|PUBLIC|PGP" + _SP + r"(?:PUBLIC|SIGNATURE)))"
    r"(?![\s\S]*-----END[\s\S]*KEY(?:" + _SP + r"BLOCK)?-----)"
)
_SECRET_CHARS = re.compile(r"[\w\-+/=.%~\\]")


def _segment_end(text: str, start: int, *, final: bool) -> int | None:
    """Where the segment beginning at ``start`` ends, or None while that is not yet decided.

    A cut falls after a whitespace run whose previous token cannot lead into a value (it does not
    end in ``:``, ``=``, a quote, or name a secret or a scheme), whose next character is not ``:``
    or ``=``, and outside an open private key block. The decision depends only on the text up to
    the first character after the run, so it is the same however the text was split.
    """
    for run in _WHITESPACE_RUN.finditer(text, start):
        end = run.end()
        if end - start > SEGMENT_LIMIT and end - start > _limit(text, start):
            return _forced_end(text, start)
        if end == len(text):
            break  # the run may continue, or the next character may be ":"
        if run.start() == start:
            continue
        words = text[max(start, run.start() - 256) : run.start()].split()
        token = words[-1] if words else ""
        if text[end] in ":=" or _CONNECTOR_TOKEN.fullmatch(token):
            continue
        if _PEM_OPEN.search(text, start, run.start()):
            continue
        return end
    if final:
        return len(text)
    if len(text) - start > SEGMENT_LIMIT and len(text) - start > _limit(text, start):
        return _forced_end(text, start)
    return None


def _limit(text: str, start: int) -> int:
    return PEM_SEGMENT_LIMIT if "-----BEGIN" in text[start : start + SEGMENT_LIMIT] else SEGMENT_LIMIT


def _forced_end(text: str, start: int) -> int:
    # A run this long holds no single secret; prefer to cut after punctuation, not inside a token.
    limit = start + _limit(text, start)
    for index in range(limit - 1, max(start, limit - 512), -1):
        if not _SECRET_CHARS.match(text[index]):
            return index + 1
    return limit


def _redact_segment(segment: str, known: tuple[str, ...]) -> str:
    for form in known:
        segment = segment.replace(form, REDACTED)
    return _until_stable(segment, _CREDENTIAL_SUBS)


# Full-replacement formats begin with one of these; a word that is, or begins with, one of them
# may be the start of a key, so it is held. Every other format keeps the text it starts with
# (a name, a scheme, a URL's scheme and user), so a word released early stays as it was.
_TRIGGERS = (
    "sk-", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "ABIA",
    "ACCA", "AIza", "xox", "hf_", "gsk_", "xai-", "eyJ",
)  # fmt: skip
_INNOCENT_TAIL = re.compile(r"\s*(?:([A-Za-z]{1,64})[.,!?;)]*\s*)?")


class StreamRedactor:
    """Credential-tier redaction of a stream: ``feed`` each chunk, ``finish`` at the end.

    Holds back only the segment still open (at most ``PEM_SEGMENT_LIMIT`` characters plus the
    latest chunk); everything before it is released as soon as a safe cut is known. A final
    plain word (``exceeded``, ``canceled.``) that no secret can begin with is released at once and
    kept as context: the segment it begins is redacted whole later, and only what follows the
    word is released then.
    """

    def __init__(self, *, known_values: Iterable[str] = ()) -> None:
        self._known = _known_value_forms(known_values)
        self._pending = ""
        self._released = 0  # characters at the start of _pending already released as they are

    def feed(self, chunk: str) -> str:
        self._pending += chunk
        return self._release(final=False)

    def finish(self) -> str:
        return self._release(final=True)

    @property
    def held(self) -> int:
        return len(self._pending)

    def _release(self, *, final: bool) -> str:
        out: list[str] = []
        start = 0
        while start < len(self._pending):
            end = _segment_end(self._pending, start, final=final)
            if end is None:
                break
            redacted = _redact_segment(self._pending[start:end], self._known)
            early = self._pending[: self._released]
            out.append(redacted[len(early) :] if redacted.startswith(early) else redacted)
            self._released = 0
            start = end
        self._pending = self._pending[start:]
        if not final and self._innocent(self._pending):
            out.append(self._pending[self._released :])
            self._released = len(self._pending)
        return "".join(out)

    def _innocent(self, tail: str) -> bool:
        found = _INNOCENT_TAIL.fullmatch(tail)
        if found is None:
            return False
        word = found.group(1) or ""
        if (word and any(t.startswith(word) or word.startswith(t) for t in _TRIGGERS)) or "eyJ" in word:
            return False
        # A configured value could begin inside the word.
        return not any(
            form.startswith(tail[i:]) or tail[i:] in form or form in tail
            for form in self._known
            for i in range(len(tail))
        )


def redact_credentials(text: str, *, known_values: Iterable[str] = ()) -> str:
    redactor = StreamRedactor(known_values=known_values)
    return redactor.feed(text) + redactor.finish()


# ---------------------------------------------------------------------------------------------
# Diagnostic tier.

_DIAGNOSTIC_SUBS: tuple[_Sub, ...] = (
    # Keep only scheme and host: paths and queries carry ids, tokens and signed parameters.
    (
        re.compile(r"\b([a-z][a-z0-9+.\-]*://)([^/\s?#\"'<>]+)[^\s\"'<>]*", re.IGNORECASE),
        r"\1\2",
    ),
    (
        re.compile(
            r"(?<![0-9A-Fa-f])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9A-Fa-f])"
        ),
        "[UUID]",
    ),
    (
        re.compile(
            r"(?<![A-Za-z0-9])(req|msg|toolu|org|user|sess|call|run|chatcmpl|resp|file|batch)"
            r"[_-][A-Za-z0-9_-]{6,}"
        ),
        r"\1_[ID]",
    ),
    # Absolute POSIX, home-relative and Windows paths with at least two segments.
    (re.compile(r"(?<![\w.:/~])(?:~)?/(?:[\w.@+\-]+/)+[\w.@+\-]*"), "[PATH]"),
    (re.compile(r"(?<![\w])[A-Za-z]:\\(?:[\w.@+\- ]+\\)*[\w.@+\-]*"), "[PATH]"),
)

_OPAQUE_RUN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{32,}")


def _opaque(match: re.Match[str]) -> str:
    # Long words and identifiers without digits are prose; base64 and hex runs carry digits.
    run = match.group(0)
    return "[OPAQUE]" if any(ch.isdigit() for ch in run) else run


_DIAGNOSTIC_ONLY: tuple[_Sub, ...] = (*_DIAGNOSTIC_SUBS, (_OPAQUE_RUN, _opaque))

# One replacement can expose another (a marker ends a word, so a glued-on "sk-..." becomes a
# token of its own); passes repeat until nothing changes, which is what makes both tiers
# idempotent. Markers are never replaced, so this converges in two or three passes.
_MAX_PASSES = 6


def _diagnostic_full(text: str) -> str:
    for _ in range(_MAX_PASSES):
        before = text
        text = _until_stable(redact_credentials(text), _DIAGNOSTIC_ONLY)
        if text == before:
            break
    return text


def redact_diagnostic(text: str, *, limit_bytes: int | None = 4096) -> str:
    text = _diagnostic_full(text)
    if limit_bytes is None:
        return text
    # A cut can leave a fragment a pattern reads differently ('key="' + mark); re-redacting the
    # cut text until it is stable keeps the tier idempotent with the bound applied.
    for _ in range(_MAX_PASSES):
        cut = truncate_utf8(text, limit_bytes=limit_bytes)
        text = _diagnostic_full(cut)
        if text == cut:
            break
    return truncate_utf8(text, limit_bytes=limit_bytes)


def _until_stable(text: str, subs: tuple[_Sub, ...]) -> str:
    for _ in range(_MAX_PASSES):
        before = text
        for pattern, replacement in subs:
            text = pattern.sub(replacement, text)
        if text == before:
            break
    return text


def truncate_utf8(text: str, *, limit_bytes: int) -> str:
    """At most ``limit_bytes`` of UTF-8, cut on a character boundary, marked when cut."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit_bytes:
        return text
    mark = TRUNCATION_MARK.encode("utf-8")
    if limit_bytes < len(mark):
        return encoded[:limit_bytes].decode("utf-8", errors="ignore")
    kept = encoded[: limit_bytes - len(mark)].decode("utf-8", errors="ignore")
    return _without_partial_marker(kept) + TRUNCATION_MARK


_MARKERS = (REDACTED, "[OPAQUE]", "[PATH]", "[UUID]", "[ID]")


def _without_partial_marker(text: str) -> str:
    # A marker cut in half ("[REDAC") would be mistaken for text by a later pass.
    start = text.rfind("[", -len(REDACTED))
    if start == -1:
        return text
    tail = text[start:]
    if any(marker.startswith(tail) and marker != tail for marker in _MARKERS):
        return text[:start]
    return text
