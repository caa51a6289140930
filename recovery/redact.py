"""Two redaction tiers, both idempotent (redacting twice changes nothing more).

- Credential tier, for user text and agent output: removes the secret formats of
  recovery/secret_formats.py and the values the caller configured (``known_values``), in plain,
  JSON-escaped and URL-encoded text, and leaves everything else as written.
- Diagnostic tier, for provider output before it is stored, logged or shown: the credential
  tier plus URL reduction (scheme and host only), internal ids, absolute paths and long opaque
  runs; then truncation on a UTF-8 boundary. Redaction happens first, so truncation can never
  keep the first half of a secret whose second half made it recognisable.

Streaming: ``StreamRedactor`` redacts text that arrives in chunks, with carry-over and bounded
memory. Text is cut into segments at whitespace that cannot be inside a secret construct (see
``_segment_end``); each segment is released, redacted, as soon as its end is known. The whole-text
functions run the same segmenter, so any split of a text gives exactly the whole text's result.

Every replacement is a bracketed marker that no pattern matches, which is what makes both tiers
idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import quote

from recovery.secret_formats import (
    AUTH_SCHEME,
    NOT_BEFORE,
    QUOTE,
    SECRET_FORMATS,
    SECRET_NAME,
    SPACE,
    SecretFormat,
)

REDACTED = "[REDACTED]"
TRUNCATION_MARK = "…"

_Sub = tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]


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
        forms.update(
            {value, quote(value, safe=""), value.replace("\\", "\\\\").replace('"', '\\"')}
        )
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
    r"(?i).*(?:[:=\"'\\]|%(?:3[AD]|2[027])|"
    + rf"{SECRET_NAME}{QUOTE}?|{NOT_BEFORE}{AUTH_SCHEME}|-----BEGIN)"
)
_PEM_OPEN = re.compile(
    r"-----BEGIN(?!" + SPACE + r"(?:CERTIFICATE|PUBLIC|PGP" + SPACE + r"(?:PUBLIC|SIGNATURE)))"
    r"(?![\s\S]*-----END[\s\S]*KEY(?:" + SPACE + r"BLOCK)?-----)"
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
    return (
        PEM_SEGMENT_LIMIT if "-----BEGIN" in text[start : start + SEGMENT_LIMIT] else SEGMENT_LIMIT
    )


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
        if (
            word and any(t.startswith(word) or word.startswith(t) for t in _TRIGGERS)
        ) or "eyJ" in word:
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
            r"(?<![0-9A-Fa-f])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
            r"[0-9a-fA-F]{12}(?![0-9A-Fa-f])"
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
