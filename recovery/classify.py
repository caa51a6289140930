"""Evidence -> Classification: deterministic, total (never raises) and fail-closed.

The first catalogue rule that matches decides. Anything no rule recognises is ``unclassified``,
which the policy hands to a person: guessing "transient" would retry what should stop.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from recovery.catalogue import RULES, Facts, Rule
from recovery.catalogue.signatures import reset_hint_ms_in
from recovery.taxonomy import (
    CODE_POLICY,
    Classification,
    Code,
    Confidence,
    Evidence,
    Klass,
    Source,
)

CATALOGUE_VERSION = "2026.11.1"

# Classification reads at most this much text; excerpts are bounded to 4 KiB already, and a
# caller passing more must not make classification cost grow with it.
TEXT_LIMIT_CHARS = 16 * 1024
_SSE_DATA_LINES_PARSED = 8

_RATE_CODES = frozenset({Code.RATE_LIMITED, Code.QUOTA_LIMITED})
# Where an error body's `error.code` may be an HTTP status relayed by a gateway.
_HTTP_SOURCES = frozenset({Source.HTTP, Source.SSE})

logger = logging.getLogger(__name__)


def _build_precheck(rules: tuple[Rule, ...]) -> re.Pattern[str]:
    needles = sorted({needle for rule in rules for needle in rule.needles})
    return re.compile("|".join(re.escape(needle) for needle in needles))


# One compiled alternation of every text rule's (lower-case) needles, run over lower-cased text:
# text without any of them can match no line rule, so ordinary prose costs one scan. Lower-casing
# first is several times faster than re.IGNORECASE and admits a superset of what it would.
PRECHECK: re.Pattern[str] = _build_precheck(RULES)


def precheck(text: str) -> frozenset[str]:
    """The needles present in ``text``; empty means no line rule can match any of its lines."""
    return frozenset(PRECHECK.findall(text.lower()))


class _RuleIndex:
    """Each rule filed under one condition it cannot match without, so most never run.

    A rule is filed under its statuses, else its provider codes, else its kinds, else its
    phases, else its needles (every rule has one: a test enforces it). The candidates for some
    facts are the rules filed under what those facts carry; checked in registry order, the first
    full match is exactly the one a scan of the whole registry would find.
    """

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self._position = {rule.id: number for number, rule in enumerate(rules)}
        self._filed: dict[tuple[str, object], list[Rule]] = {}
        for rule in rules:
            for key in self._keys_of(rule):
                self._filed.setdefault(key, []).append(rule)

    @staticmethod
    def _keys_of(rule: Rule) -> list[tuple[str, object]]:
        if rule.statuses:
            return [("status", status) for status in rule.statuses]
        if rule.provider_codes:
            return [("code", code) for code in rule.provider_codes]
        if rule.kinds:
            return [("kind", kind) for kind in rule.kinds]
        if rule.phases:
            return [("phase", phase) for phase in rule.phases]
        return [("needle", needle) for needle in rule.needles]

    def candidates(self, facts: Facts) -> list[Rule]:
        keys: list[tuple[str, object]] = [
            ("status", facts.status),
            ("kind", facts.evidence.kind),
            ("phase", facts.evidence.phase),
        ]
        keys += [("code", code) for code in facts.provider_codes]
        keys += [("needle", needle) for needle in facts.needles_found]
        found = {rule.id: rule for key in keys for rule in self._filed.get(key, ())}
        return sorted(found.values(), key=lambda rule: self._position[rule.id])


_INDEX = _RuleIndex(RULES)


def classify(evidence: Evidence) -> Classification:
    try:
        facts = digest(evidence)
        for rule in _INDEX.candidates(facts):
            if rule.matches(facts):
                return _classification(rule, facts)
    except Exception:  # total by contract: a classifier bug must fail closed, not crash a turn
        logger.exception("classifier failed; treating the failure as unclassified")
    return unclassified(evidence)


def unclassified(evidence: Evidence | None = None) -> Classification:
    return Classification(
        code=Code.UNCLASSIFIED,
        klass=Klass.UNCLASSIFIED,
        confidence=Confidence.LOW,
        rule_id=None,
        catalogue_version=CATALOGUE_VERSION,
        reset_hint_ms=_positive(evidence.retry_after_ms) if evidence else None,
        fallback_eligible=False,
        reset_at_ms=_positive(evidence.reset_at_ms) if evidence else None,
    )


def matching_rules(evidence: Evidence) -> tuple[Rule, ...]:
    """Every rule that matches, in priority order: for collision tests and ``why`` answers."""
    facts = digest(evidence)
    return tuple(rule for rule in RULES if rule.matches(facts))


def digest(evidence: Evidence) -> Facts:
    text = (evidence.excerpt or "")[:TEXT_LIMIT_CHARS]
    provider_codes: set[str] = set()
    if evidence.provider_code:
        provider_codes.add(str(evidence.provider_code).strip().lower())
    bodies = _json_bodies(text)
    messages: list[str] = []
    for body in bodies:
        codes, message = _decode_error_body(body)
        provider_codes.update(codes)
        if message:
            messages.append(message)
    # A JSON body is judged by its messages alone: other members (JSON-RPC data, metadata) are
    # not the provider's statement of what failed.
    source_text = "\n".join(messages) if bodies else text
    lines = tuple(stripped for line in source_text.splitlines() if (stripped := line.strip()))
    return Facts(
        evidence=evidence,
        status=_status(evidence, bodies),
        provider_codes=frozenset(provider_codes),
        lines=lines,
        needles_found=precheck(source_text) if lines else frozenset(),
    )


def _status(evidence: Evidence, bodies: list[Any]) -> int | None:
    """The response's status, or the one a gateway's error body names inside a 200 stream.

    OpenRouter and LiteLLM relay the upstream's HTTP status in ``error.code`` (a number, or a
    string of digits); only an HTTP or SSE failure whose own status says nothing carries one."""
    if evidence.status not in (None, 200) or evidence.source not in _HTTP_SOURCES:
        return evidence.status
    for body in bodies:
        error = body.get("error")
        relayed = _status_like(error.get("code")) if isinstance(error, dict) else None
        if relayed is not None:
            return relayed
    return evidence.status


def _status_like(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 100 <= value <= 599:
        return value
    if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
        return int(value)
    return None


def _classification(rule: Rule, facts: Facts) -> Classification:
    policy = CODE_POLICY[rule.code]
    evidence = facts.evidence
    hints = [_positive(evidence.retry_after_ms)]
    if rule.code in _RATE_CODES:
        hints.append(reset_hint_ms_in(facts.lines))
    present = [hint for hint in hints if hint is not None]
    return Classification(
        code=rule.code,
        klass=policy.klass,
        confidence=rule.confidence,
        rule_id=rule.id,
        catalogue_version=CATALOGUE_VERSION,
        reset_hint_ms=max(present) if present else None,
        fallback_eligible=policy.fallback_eligible,
        reset_at_ms=_positive(evidence.reset_at_ms),
    )


def _positive(value: int | None) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def _json_bodies(text: str) -> list[Any]:
    stripped = text.strip()
    if stripped.startswith("{"):
        body = _loads(stripped)
        return [body] if isinstance(body, dict) else []
    if "data:" not in text:
        return []
    bodies = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("data:") and line[5:].lstrip().startswith("{"):
            body = _loads(line[5:])
            if isinstance(body, dict):
                bodies.append(body)
            if len(bodies) >= _SSE_DATA_LINES_PARSED:
                break
    return bodies


def _loads(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _decode_error_body(body: dict[str, Any]) -> tuple[set[str], str]:
    """Error types/codes and the human message of an Anthropic, OpenAI or JSON-RPC error body."""
    error = body.get("error")
    node = error if isinstance(error, dict) else body
    codes: set[str] = set()
    for key in ("type", "code"):
        value = node.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, (str, int)) and str(value) != "error":
            codes.add(str(value).strip().lower())
    message = node.get("message")
    if not isinstance(message, str) and isinstance(error, str):
        message = error  # some gateways send {"error": "text"}
    return codes, message if isinstance(message, str) else ""
