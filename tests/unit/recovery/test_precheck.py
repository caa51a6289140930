"""The pre-check never rejects text that a rule matches, and prose costs one scan.

Each line rule only runs when one of its own needles was found, so the property is checked per
rule: whenever a rule matches a line, the pre-check found one of that rule's needles in it.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from recovery.catalogue import RULES, RULES_BY_ID
from recovery.catalogue.fixtures import load_fixtures
from recovery.classify import _build_precheck, digest, precheck

# Structured text rules are gated by their status or code instead (see Rule.gated_by_precheck).
TEXT_RULES = tuple(rule for rule in RULES if rule.gated_by_precheck)
POSITIVE_LINES = sorted(
    {
        line
        for fixture in load_fixtures()
        if fixture.positive and fixture.expected_rule_id in {r.id for r in TEXT_RULES}
        for line in digest(fixture.evidence).lines
    }
)
FRAGMENTS = sorted(
    {word for line in POSITIVE_LINES for word in line.split(" ")}
    | {
        "API Error: ",
        "Internal error: ",
        "Error: RetriableError: ",
        "Error: ",
        "[canceled] ",
        "context canceled",
        "peer disconnected before response",
        '"type":"overloaded_error"',
        "\u3000",
        " ",
    }
)


def _mangle_case(text: str, flips: list[bool]) -> str:
    return (
        "".join(ch.swapcase() if flips[i % len(flips)] else ch for i, ch in enumerate(text))
        if flips
        else text
    )


lines_near_signatures = st.one_of(
    st.sampled_from(POSITIVE_LINES),
    st.tuples(st.sampled_from(POSITIVE_LINES), st.lists(st.booleans(), max_size=12)).map(
        lambda pair: _mangle_case(*pair)
    ),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=10).map("".join),
    st.text(max_size=80),
)


def rules_matching(line: str) -> list[str]:
    return [rule.id for rule in TEXT_RULES if rule.matches_line(line)]


@settings(max_examples=400, deadline=None)
@given(lines_near_signatures)
@example("Error: RetriableError: Connection stalled")
def test_the_precheck_never_rejects_a_line_a_rule_matches(line):
    for rule_id in rules_matching(line):
        assert set(RULES_BY_ID[rule_id].needles) & precheck(line), rule_id


def test_the_property_is_exercised_by_lines_that_do_match():
    matched = [line for line in POSITIVE_LINES if rules_matching(line)]
    assert len(matched) >= len({rule.id for rule in TEXT_RULES}) - 1
    assert all(precheck(line) for line in matched)


def test_a_precheck_missing_one_rules_needles_would_be_caught():
    cursor = next(rule for rule in TEXT_RULES if rule.id == "cursor.retriable_error.v2")
    crippled = _build_precheck(
        tuple(rule for rule in RULES if set(rule.needles) != set(cursor.needles))
    )
    line = "Error: RetriableError: Connection stalled"

    assert cursor.matches_line(line)
    assert crippled.search(line.lower()) is None


def test_ordinary_prose_is_rejected_by_the_precheck():
    prose = (
        "I refactored the retry helper, added tests for the parser and updated the README. "
        "The build is green on CI and the deploy finished without errors."
    )
    assert precheck(prose) == frozenset()
