"""Real agents' prompt errors as they arrive (strings seen from claude-agent-acp 0.23.1, codex-acp
0.16.0 and gemini-cli 0.61.0 against the mock provider), through the adapter to a classification;
and Codex's raw JSON-RPC ``data`` text never leaving the adapter."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from pydantic import BaseModel

from recovery.providers.acp import Correlation, TerminalError, evidence_start, failure_build
from recovery.providers.acp.replay_fixtures.consume import failure_judged
from recovery.providers.acp.sdk_logs import DropUnparsedUpdates
from recovery.providers.acp.structured import codex_failure, gemini_failure, model_call_unfinished
from recovery.taxonomy import Source

CORRELATION = Correlation(session_id="s", execution_id="e", generation=1)
# Stands in for what Codex's data.message quotes: a URL with a path and provider prose.
SENTINEL = "sentinel-7f3a"


def prompt_failure(*, code, message, data=None, agent="codex-acp"):
    return failure_build(
        terminal=TerminalError(
            source=Source.ACP_PROMPT, message=message, jsonrpc_code=code, data=data
        ),
        attempt=evidence_start(correlation=CORRELATION),
        correlation=CORRELATION,
        provider_id=agent,
        model_id=None,
    )


def codex_data(message: str, info) -> dict:
    return {"message": message, "codex_error_info": info}


CODEX = [
    (
        codex_data(
            f"unexpected status 529 <unknown status code>: The server is overloaded or not ready "
            f"yet., url: http://127.0.0.1:9/{SENTINEL}/v1/responses",
            "other",
        ),
        "provider_overloaded",
    ),
    (
        codex_data(
            f"unexpected status 503 Service Unavailable: {SENTINEL}, url: http://127.0.0.1:9/v1",
            "other",
        ),
        "provider_unavailable",
    ),
    (
        codex_data(
            "unexpected status 503 Service Unavailable: The server is overloaded or not ready "
            f"yet., url: http://127.0.0.1:9/{SENTINEL}/v1/responses",
            "other",
        ),
        "provider_overloaded",
    ),
    (
        codex_data(
            f"exceeded retry limit, last status: 429 Too Many Requests {SENTINEL}",
            {"response_too_many_failed_attempts": {"http_status_code": 429}},
        ),
        "rate_limited",
    ),
    (
        codex_data(f"Selected model is at capacity. {SENTINEL}", "server_overloaded"),
        "provider_overloaded",
    ),
    (
        codex_data(f"We're currently experiencing {SENTINEL}", "internal_server_error"),
        "provider_unavailable",
    ),
    (
        codex_data(
            f"stream disconnected before completion: stream closed before {SENTINEL}", "other"
        ),
        "truncated_stream",
    ),
    (
        codex_data(
            f"stream disconnected before completion: Transport error: network error: {SENTINEL}",
            "other",
        ),
        "truncated_stream",
    ),
]


@pytest.mark.parametrize(("data", "code"), CODEX, ids=[c for _, c in CODEX])
def test_codex_failures_classify_by_their_structured_kind(data, code):
    failure = prompt_failure(code=-32603, message="Internal error", data=data)

    assert failure_judged(failure).classification.code == code
    assert failure_judged(
        failure
    ).replay.retry_allowed  # nothing was shown: the ladder may send it again


@pytest.mark.parametrize(("data", "code"), CODEX, ids=[c for _, c in CODEX])
def test_codex_data_text_never_leaves_the_adapter(data, code):
    failure = prompt_failure(code=-32603, message="Internal error", data=data)

    # Every field of what crosses into the app: evidence, metadata, message, classification.
    crossing = repr(dataclasses.astuple(failure))
    assert SENTINEL not in crossing
    assert "127.0.0.1" not in crossing


@pytest.mark.parametrize(
    "info",
    [
        "made_up_kind",
        {"server_overloaded": {}, "other": {}},  # two keys: not Codex's shape
        {"response_too_many_failed_attempts": {"http_status_code": "429; drop table"}},
        {"response_too_many_failed_attempts": {"http_status_code": 4290}},
        ["server_overloaded"],
        None,
    ],
)
def test_a_codex_error_info_off_the_allowlist_projects_nothing_or_only_its_kind(info):
    projected = codex_failure({"message": SENTINEL, "codex_error_info": info})

    assert projected is None or (projected.status is None and SENTINEL not in repr(projected))


def test_codex_kind_other_without_a_known_prefix_stays_unclassified():
    failure = prompt_failure(
        code=-32603, message="Internal error", data=codex_data(f"{SENTINEL} went wrong", "other")
    )

    assert failure_judged(failure).classification.code == "unclassified"
    assert not failure_judged(failure).replay.retry_allowed


GEMINI = [
    (503, "The model is overloaded. Please try again later.", "provider_overloaded", None),
    (
        529,
        '{"error":{"code":529,"message":"The model is overloaded. Please try again later.",'
        '"status":"UNAVAILABLE"}}',
        "provider_overloaded",
        None,
    ),
    (
        429,
        "Resource has been exhausted (e.g. check quota).\nSuggested retry after 3s.",
        "rate_limited",
        3000,
    ),
    (500, "terminated", "truncated_stream", None),
]


@pytest.mark.parametrize(("code", "message", "expected", "retry_after_ms"), GEMINI)
def test_gemini_failures_classify_by_their_http_status_code_and_body(
    code, message, expected, retry_after_ms
):
    failure = prompt_failure(code=code, message=message, agent="gemini-cli")

    assert failure_judged(failure).classification.code == expected
    assert failure.evidence.retry_after_ms == retry_after_ms
    assert failure_judged(failure).replay.retry_allowed


def test_a_gemini_body_naming_another_code_is_not_taken_as_its_status():
    projected = gemini_failure(code=500, message='{"error":{"code":429,"message":"x"}}')

    assert projected is not None and projected.status == 500 and projected.kind is None


@pytest.mark.parametrize("code", [-32603, -32000, 200, True, "503"])
def test_a_jsonrpc_code_outside_the_http_error_range_is_no_gemini_status(code):
    assert gemini_failure(code=code, message="The model is overloaded.") is None


CLAUDE = [
    ("Internal error: API Error: Unable to connect to API (UND_ERR_SOCKET)", "network_unavailable"),
    ("Internal error: API Error: Stream ended without receiving any events", "truncated_stream"),
    ("Internal error: API Error: terminated", "truncated_stream"),
    (
        'Internal error: API Error: {"type":"error","error":{"type":"overloaded_error",'
        '"message":"Overloaded"},"request_id":"req_mock01"}',
        "provider_overloaded",
    ),
    (
        'Internal error: API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
        '"message":"Overloaded"},"request_id":"req_mock01"}',
        "provider_overloaded",
    ),
]


@pytest.mark.parametrize(("message", "expected"), CLAUDE)
def test_claude_code_failures_classify_by_their_message(message, expected):
    failure = prompt_failure(code=-32603, message=message, agent="claude-agent-acp")

    assert failure_judged(failure).classification.code == expected
    assert failure_judged(failure).replay.retry_allowed


def test_a_gemini_turn_ended_without_a_finished_model_call_is_no_answer():
    # gemini-cli 0.61: the result of a turn whose stream carried an error event after some text.
    unfinished = {
        "quota": {"token_count": {"input_tokens": 0, "output_tokens": 0}, "model_usage": []}
    }
    answered = {
        "quota": {
            "token_count": {"input_tokens": 3517, "output_tokens": 9},
            "model_usage": [{"model": "gemini-2.5-pro", "token_count": {"output_tokens": 9}}],
        }
    }

    assert model_call_unfinished(unfinished)
    assert not model_call_unfinished(answered)


@pytest.mark.parametrize("meta", [None, {}, {"quota": None}, {"quota": {}}, {"other": []}])
def test_a_result_without_gemini_usage_record_is_no_evidence_of_an_unfinished_turn(meta):
    assert not model_call_unfinished(meta)


def test_only_the_sdks_traceback_for_an_update_it_could_not_parse_is_dropped():
    class Used(BaseModel):
        used: int

    try:
        Used.model_validate({"used": None})
    except Exception as error:  # noqa: BLE001 -- the SDK's own exception, as it logs it
        invalid = error
    drop = DropUnparsedUpdates()

    def record(msg, args, error):
        return logging.LogRecord(
            "root", logging.ERROR, "", 0, msg, args, (type(error), error, None)
        )

    notification = "Unhandled error while handling notification method=%s"
    assert not drop.filter(record(notification, ("session/update",), invalid))
    assert drop.filter(record(notification, ("session/update",), RuntimeError("real")))
    assert drop.filter(record(notification, ("session/request_permission",), invalid))
    assert drop.filter(record("Connection main loop failed", (), invalid))
