"""A planted secret never survives either tier; both tiers are idempotent; truncation is safe."""

from __future__ import annotations

import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from recovery.redact import REDACTED, TRUNCATION_MARK, redact_credentials, redact_diagnostic

ALNUM = string.ascii_letters + string.digits
# Random-looking bodies (a digit, both cases): low-entropy values such as "aaaa…" are not claimed.
bodies = st.text(alphabet=ALNUM, min_size=28, max_size=46).map(lambda s: f"Q7{s}x")

# (template with {s} for the secret body, shape name). Every shape the brief names.
SHAPES = [
    "sk-ant-api03-{s}",
    "sk-proj-{s}",
    "sk-{s}",
    "ghp_{s}",
    "gho_{s}",
    "github_pat_11AB{s}_{s}",
    "Bearer {s}",
    "Authorization: Basic {s}",
    '"Authorization": "Bearer {s}"',
    "api_key={s}",
    '"api_key": "{s}"',
    "x-api-key: {s}",
    "ANTHROPIC_API_KEY={s}",
    "password={s}",
    "client_secret: '{s}'",
    "token={s}",
    "https://user:{s}@example.com/v1/messages",
    "postgresql://admin:{s}@db.internal:5432/kandev",
]
surrounding = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(SHAPES), bodies, surrounding, surrounding, st.sampled_from([" ", "\n", "\t"])
)
def test_a_planted_secret_never_survives_either_tier(shape, body, before, after, gap):
    assume(body not in before and body not in after)
    text = before + gap + shape.format(s=body) + gap + after

    assert body not in redact_credentials(text)
    assert body not in redact_diagnostic(text)
    assert body not in redact_diagnostic(text, limit_bytes=64)


texts = st.one_of(
    st.text(max_size=200),
    st.lists(
        st.one_of(
            st.sampled_from(SHAPES).map(lambda s: s.format(s="a1B2c3D4e5F6g7H8i9J0k1")),
            st.sampled_from(
                [
                    "https://api.anthropic.com/v1/messages?beta=true",
                    "/home/runner/work/app/main.py",
                    "C:\\Users\\me\\app\\x.py",
                    "req_011CVabcdef123456",
                    "123e4567-e89b-12d3-a456-426614174000",
                    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODk=",
                    "[REDACTED]",
                    "key:",
                    '"',
                    "=",
                    " ",
                    "\n",
                    "é",
                    "日本",
                ]
            ),
            st.text(max_size=8),
        ),
        max_size=12,
    ).map("".join),
)


@settings(max_examples=200, deadline=None)
@given(texts)
def test_both_tiers_are_idempotent(text):
    once = redact_credentials(text)
    assert redact_credentials(once) == once
    diagnosed = redact_diagnostic(text, limit_bytes=None)
    assert redact_diagnostic(diagnosed, limit_bytes=None) == diagnosed
    bounded = redact_diagnostic(text, limit_bytes=50)
    assert redact_diagnostic(bounded, limit_bytes=50) == bounded


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(min_value=0, max_value=120))
def test_truncation_respects_the_byte_limit_and_cuts_on_a_character_boundary(text, limit):
    full = redact_diagnostic(text, limit_bytes=None)
    bounded = redact_diagnostic(text, limit_bytes=limit)

    assert len(bounded.encode("utf-8")) <= limit
    kept = bounded.removesuffix(TRUNCATION_MARK) if bounded != full else bounded
    if not full.startswith(kept):
        # A value cut at the bound may be redacted whole: a cut view of it cannot tell a code
        # expression (followed by "(" or "[") from a key. Everything before it is kept as is.
        assert full.startswith(kept[: kept.rindex(REDACTED)])


def test_redaction_happens_before_truncation():
    secret_body = "a1B2c3D4e5F6g7H8i9J0"
    text = "x" * 30 + " sk-ant-api03-" + secret_body
    # Cutting first would keep "sk-ant-api03-a1B2c3" with too few characters to be recognised.
    assert "a1B2c3" not in redact_diagnostic(text, limit_bytes=50)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "POST https://api.anthropic.com/v1/messages?key=abc failed",
            "POST https://api.anthropic.com failed",
        ),
        ("at /home/runner/app/recovery/guard.py line 3", "at [PATH] line 3"),
        ("request req_011CVabcdef123456 failed", "request req_[ID] failed"),
        ("session 123e4567-e89b-12d3-a456-426614174000", "session [UUID]"),
        ("blob 0123456789abcdef0123456789abcdef01", "blob [OPAQUE]"),
        ("org org-AbCdEf123456 is over quota", "org org_[ID] is over quota"),
    ],
)
def test_the_diagnostic_tier_reduces_urls_paths_ids_and_opaque_runs(text, expected):
    assert redact_diagnostic(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "monkey: banana; input_tokens=12, max_tokens: 1024",
        "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)",
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary.",
        "internationalization_and_localization_framework_config",
        "the task-force met",
    ],
)
def test_ordinary_text_passes_through_the_credential_tier_untouched(text):
    assert redact_credentials(text) == text


def test_the_credential_tier_keeps_the_user_text_around_a_secret():
    text = "Please deploy with OPENAI_API_KEY=sk-proj-a1B2c3D4e5F6g7H8i9J0 and then run the tests."
    assert redact_credentials(text) == (
        "Please deploy with OPENAI_API_KEY=[REDACTED] and then run the tests."
    )
