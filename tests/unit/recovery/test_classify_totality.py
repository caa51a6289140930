"""classify is total (never raises) and fail-closed, for any evidence at all."""

from __future__ import annotations

import json
import logging

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recovery.catalogue.fixtures import load_fixtures
from recovery.classify import CATALOGUE_VERSION, classify
from recovery.taxonomy import (
    CODE_POLICY,
    Code,
    Evidence,
    Exposure,
    Kind,
    Klass,
    Phase,
    Source,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "error", "code", "message", "data", "x"]), children, max_size=4
        )
    ),
    max_leaves=12,
)
FIXTURE_EXCERPTS = sorted({fixture.evidence.excerpt for fixture in load_fixtures()})
excerpts = st.one_of(
    st.sampled_from(FIXTURE_EXCERPTS),
    st.text(max_size=300),
    json_values.map(json.dumps),
    json_values.map(lambda v: "data: " + json.dumps(v)),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", errors="replace")),
)
evidence = st.builds(
    Evidence,
    source=st.sampled_from(Source),
    excerpt=excerpts,
    phase=st.none() | st.sampled_from(Phase),
    kind=st.sampled_from(Kind),
    status=st.none() | st.integers(min_value=-10, max_value=1000),
    retry_after_ms=st.none() | st.integers(min_value=-(10**12), max_value=10**12),
    provider_code=st.none() | st.text(max_size=30),
    exposure=st.sampled_from(Exposure),
    terminal_seen=st.booleans(),
    provider_id=st.none() | st.text(max_size=10),
    reset_at_ms=st.none() | st.integers(min_value=-(10**15), max_value=10**15),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(evidence)
def test_classification_is_total_and_consistent_with_the_policy_table(caplog, item):
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="recovery.classify"):
        result = classify(item)

    # No rule crashed: the fail-closed net was not what produced this answer.
    assert caplog.records == []
    assert result.klass is CODE_POLICY[result.code].klass
    assert result.fallback_eligible is CODE_POLICY[result.code].fallback_eligible
    assert result.catalogue_version == CATALOGUE_VERSION
    assert (result.rule_id is None) == (result.code is Code.UNCLASSIFIED)
    assert result.reset_hint_ms is None or result.reset_hint_ms > 0


@settings(max_examples=100, deadline=None)
@given(evidence)
def test_classification_is_deterministic(item):
    assert classify(item) == classify(item)


def test_evidence_nobody_recognises_fails_closed():
    result = classify(Evidence(source=Source.EXIT, excerpt="process exited with status 3"))
    assert (result.code, result.klass, result.rule_id) == (
        Code.UNCLASSIFIED,
        Klass.UNCLASSIFIED,
        None,
    )


def test_a_crash_inside_classification_fails_closed_instead_of_raising(caplog):
    broken = Evidence(source=Source.STDERR, excerpt=12345)  # type: ignore[arg-type]  # a buggy adapter

    with caplog.at_level(logging.ERROR, logger="recovery.classify"):
        result = classify(broken)

    assert result.code is Code.UNCLASSIFIED
    assert "classifier failed" in caplog.text


@settings(max_examples=300, deadline=None)
@given(evidence)
def test_the_rule_index_finds_exactly_what_a_full_registry_scan_finds(item):
    from recovery.catalogue import RULES
    from recovery.classify import digest

    facts = digest(item)
    scanned = next((rule.id for rule in RULES if rule.matches(facts)), None)
    assert classify(item).rule_id == scanned
