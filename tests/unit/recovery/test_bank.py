"""The whole accuracy bank classifies right, through the adapters' own decoders, and each limit
family gets the decision its code promises: money, quota, rate limit, size and context length
are told apart, and only the rate limit is waited out."""

from __future__ import annotations

import json
import random

import pytest

from recovery.bank import BadBankEntry, accuracy, evidence_of, load_bank, run_bank
from recovery.budget import Budget, RetrySettings
from recovery.classify import classify
from recovery.clock import FakeClock
from recovery.policy import Action, decide
from recovery.taxonomy import Code, Klass
from recovery.wording import recovery_actions

BANK = load_bank()


def test_the_bank_holds_about_a_hundred_provider_strings_and_prose_negatives():
    families = {entry.family for entry in BANK}
    provider_strings = [entry for entry in BANK if entry.expect != "unclassified"]
    negatives = [entry for entry in BANK if entry.expect == "unclassified"]

    assert len(provider_strings) >= 100
    assert len(negatives) >= 25
    assert {
        "gemini",
        "gemini_cli",
        "bedrock",
        "openrouter",
        "claude_code",
        "codex",
        "python_sdk",
        "cursor",
        "openai",
        "deepseek",
        "groq",
        "anthropic",
        "prose",
    } <= families


def test_every_bank_entry_classifies_as_expected():
    outcomes = run_bank(BANK)
    misses = [
        (outcome.entry.name, outcome.entry.expect, outcome.got)
        for outcome in outcomes
        if not outcome.correct
    ]

    assert misses == []
    assert accuracy(outcomes) == 1.0


@pytest.mark.parametrize(
    "row, message",
    [
        ({"family": "x", "wire": "carrier pigeon", "expect": "unclassified"}, "wire must be"),
        ({"family": "x", "wire": "acp_chunk", "text": "hi"}, "expected code"),
    ],
)
def test_a_bad_bank_entry_is_refused_with_its_line(tmp_path, row, message):
    (tmp_path / "bad.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")

    with pytest.raises(BadBankEntry, match=rf"bad.jsonl:1: .*{message}"):
        load_bank(tmp_path)


def entry(note: str):
    return next(e for e in BANK if e.row["note"] == note)


def decision_for(note: str, *, fallbacks=()):
    clock = FakeClock()
    evidence = entry(note).evidence()
    budget = Budget.start(settings=RetrySettings(jitter=0), clock=clock, target="primary")
    budget = budget.record_attempt(target="primary")
    return decide(
        evidence=evidence,
        classification=classify(evidence),
        budget=budget,
        current_target="primary",
        fallbacks=fallbacks,
        clock=clock,
        rng=random.Random(3),
    )


@pytest.mark.parametrize(
    "note",
    [
        "insufficient_quota 429",
        "billing_hard_limit_reached 400",
        "DeepSeek 402",
        "402 insufficient credits",
    ],
)
def test_billing_failures_are_hard_and_say_it_is_money(note):
    decision = decision_for(note, fallbacks=["other"])

    assert decision.classification.code is Code.BILLING_LIMITED
    assert decision.action is Action.MANUAL
    assert decision.message.startswith("Billing limit reached. The account is out of credit")


def test_a_per_day_quota_is_not_waited_out_like_a_rate_limit():
    per_day = decision_for("requests per day")
    per_minute = decision_for("tokens per minute")

    assert (per_day.classification.code, per_day.action) == (Code.QUOTA_LIMITED, Action.MANUAL)
    assert per_day.message == "Usage quota reached. The limit resets in 7 min 12 s."
    assert per_minute.classification.code is Code.RATE_LIMITED
    assert per_minute.action is Action.RETRY


def test_groq_request_too_large_is_never_retried_and_offers_only_a_fresh_start():
    decision = decision_for("413 request too large for TPM", fallbacks=["other"])

    assert decision.classification.code is Code.REQUEST_TOO_LARGE
    assert decision.action is Action.MANUAL
    assert "sending it again would fail the same way" in decision.message
    assert recovery_actions(str(Code.REQUEST_TOO_LARGE)) == ("fresh",)


def test_a_full_context_window_is_its_own_code_and_offers_only_a_fresh_start():
    decision = decision_for("maximum context length")

    assert decision.classification.code is Code.CONTEXT_LENGTH_EXCEEDED
    assert decision.action is Action.MANUAL
    assert "context window" in decision.message
    assert recovery_actions(str(Code.CONTEXT_LENGTH_EXCEEDED)) == ("fresh",)


def test_a_withdrawn_anthropic_model_fails_over_to_the_next_target():
    decision = decision_for("404 not_found_error for a withdrawn model", fallbacks=["other"])

    assert decision.classification.code is Code.MODEL_UNAVAILABLE
    assert (decision.action, decision.target) == (Action.FAILOVER, "other")
    assert decision.message == "Model unavailable. Switching to other."


def test_a_withdrawn_model_without_a_fallback_asks_for_another_model():
    decision = decision_for("404 not_found_error for a withdrawn model")

    assert decision.action is Action.MANUAL
    assert decision.message == "Model unavailable. Choose another model, then resume."


def test_a_wrong_anthropic_path_is_set_up_not_a_model():
    assert classify(entry("404 not_found_error for a wrong path").evidence()).code is (
        Code.PROVIDER_NOT_CONFIGURED
    )


def test_gemini_api_key_invalid_is_authentication_not_an_invalid_request():
    for note in (
        "API_KEY_INVALID arrives as 400 INVALID_ARGUMENT",
        "raw Google body naming API_KEY_INVALID",
    ):
        classification = classify(entry(note).evidence())
        assert (classification.code, classification.klass) == (Code.AUTH_REQUIRED, Klass.HARD)


def test_json_in_answers_tool_output_and_logs_is_never_failure_evidence():
    quoted = [e for e in BANK if e.family == "prose" and "{" in json.dumps(e.row)]

    assert len(quoted) >= 8
    assert [(e.name, str(classify(e.evidence()).code)) for e in quoted] == [
        (e.name, "unclassified") for e in quoted
    ]


def test_an_unrelated_crash_after_a_logged_overload_is_not_replayed_as_one():
    crash = evidence_of(
        "exit",
        {
            "text": '2026-11-02T10:00:00Z event: error data: {"type":"error","error":'
            '{"type":"overloaded_error","message":"Overloaded"}}\n'
            "TypeError: Cannot read properties of undefined (reading 'map')"
        },
    )

    assert classify(crash).code is Code.UNCLASSIFIED
