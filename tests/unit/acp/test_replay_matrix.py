"""The replay fixture matrix: the corpus is complete and clean, and the evidence layer reaches
each fixture's declared disposition. (The transport layer replays the same files in
tests/integration/acp/test_replay_transport.py.)"""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from recovery.providers.acp.replay_fixtures import (
    CLASSIFYING,
    ReplayMatrixError,
    forbidden_shapes_in,
    load_replay_fixtures,
    required_cells,
)
from recovery.providers.acp.replay_fixtures.consume import failure_judged, replay_evidence_layer
from recovery.providers.acp.replay_fixtures.loader import REPLAY_DIR

FIXTURES = load_replay_fixtures()
IDS = [fixture.path.stem for fixture in FIXTURES]


def test_the_matrix_has_exactly_the_22_required_cells():
    assert len(required_cells()) == 22
    assert sorted(fixture.cell for fixture in FIXTURES) == sorted(required_cells())
    assert not CLASSIFYING["openrouter"] and not CLASSIFYING["litellm"]


@pytest.mark.parametrize("fixture", FIXTURES, ids=IDS)
def test_the_evidence_layer_reaches_the_declared_disposition(fixture):
    tokens, outcome = replay_evidence_layer(fixture)
    verdict = failure_judged(outcome)

    assert verdict.replay.retry_allowed is fixture.expect.retry_allowed
    assert verdict.replay.reason == fixture.expect.reason
    assert verdict.classification.code == fixture.expect.diagnostic_code
    recorded = outcome.attempt.diagnostic
    assert (recorded.code if recorded else None) == fixture.expect.recorded_diagnostic_code
    assert [*tokens, f"failure:{verdict.classification.code}"] == list(fixture.expect.events)


@pytest.mark.parametrize("fixture", FIXTURES, ids=IDS)
def test_no_fixture_payload_holds_a_forbidden_shape(fixture):
    raw = json.loads(fixture.path.read_text(encoding="utf-8"))
    raw["capture"].pop("contract")

    assert forbidden_shapes_in(raw) == []


@pytest.mark.parametrize(
    ("sample", "shape"),
    [
        ("key sk-ant-api03-0123456789abcdef", "credential"),
        ("x-api-key: abcd1234efgh", "credential assignment"),
        ("Bearer abcdefgh12345678", "bearer token"),
        ("org-0123456789abcdef", "account or organisation id"),
        ("see https://example.com", "url"),
        ("in /home/dev/project", "absolute host path"),
        ("mail dev@example.com", "email"),
        ("id 123e4567-e89b-12d3-a456-426614174000", "uuid"),
    ],
)
def test_the_scan_finds_each_forbidden_shape(sample, shape):
    assert shape in forbidden_shapes_in({"frames": [{"text": sample}]})


def test_provider_error_texts_are_not_mistaken_for_forbidden_shapes():
    texts = [
        "HTTP/2 stream closed with error code CANCEL (0x8)",
        "user_message_chunk",
        "API Error: 502 Bad Gateway",
    ]

    assert forbidden_shapes_in(texts) == []


@pytest.fixture
def corpus(tmp_path):
    for path in REPLAY_DIR.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def rewrite(path, change):
    raw = json.loads(path.read_text(encoding="utf-8"))
    change(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")


def problems_of(directory) -> list[str]:
    with pytest.raises(ReplayMatrixError) as failure:
        load_replay_fixtures(directory)
    return failure.value.problems


def test_a_missing_required_cell_fails_the_load(corpus):
    (corpus / "litellm-queued.json").unlink()

    assert problems_of(corpus) == ["missing required cell litellm-queued.json"]


def test_a_cell_filled_twice_fails_the_load(corpus):
    shutil.copy(corpus / "teamclaude-matched.json", corpus / "teamclaude-matched-copy.json")
    rewrite(
        corpus / "teamclaude-matched-copy.json", lambda raw: raw.update(session_id="replay-copy")
    )

    assert any("already filled" in problem for problem in problems_of(corpus))


def test_equivalent_frames_within_one_case_fail_the_load(corpus):
    source = json.loads((corpus / "claude-direct-matched.json").read_text(encoding="utf-8"))

    def same_frames(raw):
        # The same frames under another replay identity are still the same frames.
        text = json.dumps(source["frames"]).replace(source["session_id"], raw["session_id"])
        raw["frames"] = json.loads(text)

    rewrite(corpus / "teamclaude-matched.json", same_frames)

    assert any("same frames" in problem for problem in problems_of(corpus))


def test_a_classifying_flag_that_disagrees_with_the_matrix_fails_the_load(corpus):
    rewrite(corpus / "openrouter-matched.json", lambda raw: raw.update(classifying=True))

    assert problems_of(corpus) == [
        "openrouter-matched.json: classifying flag disagrees with the matrix"
    ]


def test_a_prose_cell_for_a_non_classifying_gateway_is_not_a_cell(corpus):
    shutil.copy(corpus / "claude-direct-prose-tool.json", corpus / "litellm-prose-tool.json")

    def as_litellm(raw):
        raw.update(gateway="litellm", classifying=False, session_id="replay-litellm-prose-tool")

    rewrite(corpus / "litellm-prose-tool.json", as_litellm)

    assert any("is not a matrix cell" in problem for problem in problems_of(corpus))


def test_a_forbidden_shape_in_a_payload_fails_the_load(corpus):
    def leak(raw):
        raw["frames"][0]["params"]["update"]["content"]["text"] += " see /home/dev/notes"

    rewrite(corpus / "claude-direct-mismatched.json", leak)

    assert (
        "claude-direct-mismatched.json: forbidden shapes in payload: absolute host path"
        in problems_of(corpus)
    )


@pytest.mark.parametrize("generation", [0, -1, True, "1"])
def test_a_zero_or_malformed_generation_fails_the_load(corpus, generation):
    rewrite(corpus / "litellm-matched.json", lambda raw: raw.update(generation=generation))

    assert any("generation must be a positive integer" in p for p in problems_of(corpus))


def test_a_reconstructed_fixture_must_cite_a_public_contract(corpus):
    rewrite(
        corpus / "litellm-matched.json",
        lambda raw: raw["capture"].update(contract="https://gateway.internal.example/spec"),
    )

    assert any("public contract" in p for p in problems_of(corpus))


def test_fixtures_are_immutable_values():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FIXTURES[0].generation = 0  # type: ignore[misc]
