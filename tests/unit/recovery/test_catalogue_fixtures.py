"""Every fixture classifies as pinned; every rule has positives and prose negatives."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from recovery.catalogue import RULES, RULES_BY_ID, Tier
from recovery.catalogue.fixtures import PROSE, load_fixtures
from recovery.classify import CATALOGUE_VERSION, classify, matching_rules
from recovery.redact import redact_diagnostic
from recovery.taxonomy import CODE_POLICY

FIXTURES = load_fixtures()


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f"{f.name} {f.note}" for f in FIXTURES])
def test_each_fixture_classifies_as_pinned(fixture):
    classification = classify(fixture.evidence)

    assert (classification.code, classification.rule_id) == (
        fixture.expected_code,
        fixture.expected_rule_id,
    )
    assert classification.klass is CODE_POLICY[fixture.expected_code].klass
    # The rule index picked what a scan of the whole registry would have picked.
    first = next(iter(matching_rules(fixture.evidence)), None)
    assert classification.rule_id == (first.id if first else None)
    assert classification.catalogue_version == CATALOGUE_VERSION
    if fixture.checks_reset_hint:
        assert classification.reset_hint_ms == fixture.expected_reset_hint_ms


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f"{f.name} {f.note}" for f in FIXTURES])
def test_a_fixture_pins_its_own_rule_only_when_positive(fixture):
    if fixture.positive:
        assert fixture.expected_rule_id == fixture.rule
    else:
        assert fixture.expected_rule_id != fixture.rule


def test_every_rule_has_a_positive_and_a_negative_fixture():
    positives = {f.rule for f in FIXTURES if f.positive}
    negatives = {f.rule for f in FIXTURES if not f.positive}

    missing = [
        (rule.id, "positive" if rule.id not in positives else "negative")
        for rule in RULES
        if rule.id not in positives or rule.id not in negatives
    ]

    assert missing == []


def test_fixtures_name_only_rules_that_exist():
    named = {f.rule for f in FIXTURES} | {f.expected_rule_id for f in FIXTURES}
    assert named - set(RULES_BY_ID) - {PROSE, None} == set()


def test_prose_fixtures_match_no_rule_at_all():
    prose = [f for f in FIXTURES if f.rule == PROSE]
    assert len(prose) >= 10
    assert [
        (f.evidence.excerpt, matching_rules(f.evidence))
        for f in prose
        if matching_rules(f.evidence)
    ] == []


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_redacting_a_fixture_again_does_not_change_its_classification(fixture):
    again = replace(fixture.evidence, excerpt=redact_diagnostic(fixture.evidence.excerpt))
    assert classify(again) == classify(fixture.evidence)


def test_the_registry_is_ordered_by_tier():
    tiers = [rule.tier for rule in RULES]
    assert tiers == sorted(tiers)
    assert {Tier.STRUCTURED, Tier.EXACT, Tier.BROAD} <= set(tiers)


def test_rule_ids_are_unique_stable_and_versioned():
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)*\.v[0-9]+", rule_id) for rule_id in ids)


def test_every_rule_says_why_it_is_as_narrow_as_it_is():
    assert [rule.id for rule in RULES if len(rule.why_narrow) < 20] == []


def test_every_text_rule_the_precheck_gates_declares_lower_case_needles():
    for rule in RULES:
        if rule.gated_by_precheck:
            assert rule.needles, rule.id
            assert all(needle == needle.lower() for needle in rule.needles), rule.id
        else:  # no text, or a status or code gates it: needles would be dead weight in the scan
            assert not rule.needles, rule.id


def test_every_rule_has_a_condition():
    for rule in RULES:
        conditions = (rule.statuses, rule.provider_codes, rule.kinds, rule.phases, rule.reads_text)
        assert any(conditions), rule.id
