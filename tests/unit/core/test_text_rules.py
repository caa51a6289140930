"""The text rules and the JSON Schema patterns the API publishes for them say the same thing."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sessions_app.text_rules import (
    NAME_PATTERN,
    SINGLE_LINE_PATTERN,
    TEXT_PATTERN,
    name_problem,
    single_line_problem,
    storable_json,
    storable_text,
    text_problem,
)

# Text with the characters these rules are about mixed into ordinary text (no lone surrogates:
# a JSON Schema pattern cannot speak of them, and the rules refuse them separately below).
TRICKY = "\x00\t\n\r\x1b\x7f\x85\xa0\u061c\u200b\u200e\u2028\u202e\u2066\u2069\u3000\ufeff "
texts = st.text(
    alphabet=st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from(TRICKY))
)

RULES = [
    (name_problem, NAME_PATTERN),
    (single_line_problem, SINGLE_LINE_PATTERN),
    (text_problem, TEXT_PATTERN),
]


@pytest.mark.parametrize(("problem", "pattern"), RULES, ids=["name", "single_line", "text"])
@given(value=texts)
@example(value="")
@example(value=" \u3000 ")
@example(value="ok\n")
def test_the_published_pattern_accepts_exactly_what_the_rule_accepts(problem, pattern, value):
    assert (re.fullmatch(pattern, value) is not None) == (problem(value) is None)


@pytest.mark.parametrize(
    "name",
    [
        "Mock\u202egnp.exe",
        "Plan\x00",
        "two\nlines",
        "tab\there",
        "\u2066isolate\u2069",
        "\ufeffBOM",
    ],
)
def test_names_refuse_control_and_bidi_override_characters(name):
    assert "control or bidirectional-override" in name_problem(name)


@pytest.mark.parametrize("name", ["Plan the week", "Café ☕", "שלום עולם", "計画", "a\u00a0b"])
def test_names_in_any_script_are_fine(name):
    assert name_problem(name) is None


def test_blank_names_are_refused_as_empty():
    assert name_problem(" \u3000 ") == "must not be empty"


def test_prompt_text_keeps_code_and_layout_but_refuses_nul():
    assert text_problem("def f():\n\treturn '\u202e'  # any script: 計画\r\n") is None
    assert text_problem("before\x00after") == "must not contain NUL characters (U+0000)"
    assert text_problem("\n\t ") == "must not be empty"


@pytest.mark.parametrize("rule", [name_problem, single_line_problem, text_problem])
def test_a_lone_surrogate_is_refused_everywhere(rule):
    assert "lone surrogate" in rule("half a pair: \ud800")


def test_storable_text_replaces_nul_and_lone_surrogates_one_for_one():
    raw = "a\x00b\ud800c\udc00d"

    stored = storable_text(raw)

    assert stored == "a\ufffdb\ufffdc\ufffdd"
    assert len(stored) == len(raw)  # streamed offsets count code points
    stored.encode("utf-8")  # no longer raises


def test_storable_text_leaves_ordinary_text_alone():
    text = "tabs\tnewlines\n emoji \U0001f600 and \u202e bidi: only storage is the rule here"

    assert storable_text(text) is text


def test_storable_json_cleans_every_string_keys_included_and_keeps_other_values():
    value = {"out\x00put": ["x\x00", {"n": 1, "ok": True, "none": None, "s": "\udfff"}]}

    assert storable_json(value) == {
        "out\ufffdput": ["x\ufffd", {"n": 1, "ok": True, "none": None, "s": "\ufffd"}]
    }
