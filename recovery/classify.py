"""Evidence -> Classification: deterministic, total (never raises) and fail-closed.

The first catalogue rule that matches decides. Anything no rule recognises is ``unclassified``,
which the policy hands to a person: guessing "transient" would retry what should stop.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from recovery.catalogue import RULES, Facts, Rule
from recovery.catalogue.signatures import (
    RELAY_NEEDLES,
    Relayed,
    google_detail_codes,
    relayed_error,
    reset_hint_ms_in,
)
from recovery.taxonomy import (
    CODE_POLICY,
    Classification,
    Code,
    Confidence,
    Evidence,
    Klass,
    Source,
    http_status_of,
)

CATALOGUE_VERSION = "2026.12.1"

# Classification reads at most this much text; excerpts are bounded to 4 KiB already, and a
# caller passing more must not make classification cost grow with it.
TEXT_LIMIT_CHARS = 16 * 1024
_SSE_DATA_LINES_PARSED = 8

_RATE_CODES = frozenset({Code.RATE_LIMITED, Code.QUOTA_LIMITED})
# Where an error body's `error.code` may be an HTTP status relayed by a gateway.
_HTTP_SOURCES = frozenset({Source.HTTP, Source.SSE})
# Where the excerpt is an error body (JSON) rather than text someone printed.
_BODY_SOURCES = frozenset({Source.HTTP, Source.SSE, Source.ACP_PROMPT})
# An agent's own log: where a Python SDK's exception line is the agent failing, not an example.
_LOG_SOURCES = frozenset({Source.STDERR, Source.EXIT})

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Needles:
    """The pre-check: lower-case literals, each looked for with ``in`` (C's substring search,
    several times faster over a chunk of prose than one regex alternation of them all)."""

    literals: tuple[str, ...]

    def findall(self, lowered: str) -> list[str]:
        return [needle for needle in self.literals if needle in lowered]

    def search(self, lowered: str) -> str | None:
        return next((needle for needle in self.literals if needle in lowered), None)


def _build_precheck(rules: tuple[Rule, ...]) -> Needles:
    needles = {needle for rule in rules if rule.gated_by_precheck for needle in rule.needles}
    return Needles(tuple(sorted(needles | set(RELAY_NEEDLES))))


# Every text rule's (lower-case) needles, looked for in lower-cased text: text without any of
# them can match no line rule, so ordinary prose costs one pass. Lower-casing first admits a
# superset of what a case-insensitive match would. The literals that open a relayed error line
# (RELAY_NEEDLES) are among them, so one pass answers both questions.
PRECHECK: Needles = _build_precheck(RULES)
_RELAY_NEEDLES = frozenset(RELAY_NEEDLES)


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
        filed = [rules for key in keys if (rules := self._filed.get(key))]
        if len(filed) == 1:
            return filed[0]  # filed in registry order already (the common case: one signature)
        found = {rule.id: rule for rules in filed for rule in rules}
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
    bodies = _json_bodies(text, evidence.source)
    messages: list[str] = []
    for body in bodies:
        codes, body_messages = _decode_error_body(body)
        provider_codes.update(codes)
        messages.extend(body_messages)
    # A JSON body is judged by its messages alone: other members (JSON-RPC data, metadata) are
    # not the provider's statement of what failed.
    source_text = "\n".join(messages) if bodies else text
    lines = _lines(source_text)
    # Needles are looked for in the whole text: a superset of the lines' (fenced lines included),
    # which only lets more rules be tried, never fewer.
    needles = precheck(source_text) if lines else frozenset()
    status = _status(evidence, bodies)
    relayed = _relayed(lines, evidence.source) if needles & _RELAY_NEEDLES else None
    if relayed is not None:
        relayed_lines: tuple[str, ...] = ()
        if relayed.body is not None:
            codes, body_messages = _decode_error_body(relayed.body)
            provider_codes.update(codes)
            relayed_lines = _lines("\n".join(body_messages))
        if relayed.code:
            provider_codes.add(relayed.code)
        if relayed.message:
            relayed_lines = (relayed.message.strip(), *relayed_lines)
        if relayed_lines:
            lines = relayed_lines + lines
            needles = needles | precheck("\n".join(relayed_lines))
        if status is None:
            status = relayed.status
    return Facts(
        evidence=evidence,
        status=status,
        provider_codes=frozenset(provider_codes),
        lines=lines,
        needles_found=needles,
    )


def _lines(text: str) -> tuple[str, ...]:
    """Stripped, non-empty lines, without those inside a Markdown code fence: an answer's example
    of an error body is text about a failure, never the failure."""
    if "```" not in text and "~~~" not in text:
        return tuple(stripped for line in text.splitlines() if (stripped := line.strip()))
    kept = []
    fenced = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif stripped and not fenced:
            kept.append(stripped)
    return tuple(kept)


def _relayed(lines: tuple[str, ...], source: Source) -> Relayed | None:
    """The error an agent or SDK relayed on one line; the last such line is the one raised."""
    python_reprs = source in _LOG_SOURCES
    for line in reversed(lines):
        found = relayed_error(line, python_reprs=python_reprs)
        if found is not None:
            return found
    return None


def _status(evidence: Evidence, bodies: list[Any]) -> int | None:
    """The response's status, or the one a gateway's error body names inside a 200 stream.

    OpenRouter and LiteLLM relay the upstream's HTTP status in ``error.code`` (a number, or a
    string of digits); only an HTTP or SSE failure whose own status says nothing carries one."""
    if evidence.status not in (None, 200) or evidence.source not in _HTTP_SOURCES:
        return evidence.status
    for body in bodies:
        error = body.get("error")
        relayed = http_status_of(error.get("code")) if isinstance(error, dict) else None
        if relayed is not None:
            return relayed
    return evidence.status


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


def _json_bodies(text: str, source: Source) -> list[Any]:
    """Error bodies in ``text``, read only where a body is what the source carries.

    An HTTP response or stream event is a body (Gemini's OpenAI-compatible endpoint wraps it in a
    list), and so is the JSON-RPC error built for an ACP prompt. An agent's chunk or stderr is
    text: JSON in it is a tool's output, a log line or an example, never the failure itself."""
    if source not in _BODY_SOURCES:
        return []
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        body = _loads(stripped)
        if isinstance(body, list):
            return [item for item in body[:_SSE_DATA_LINES_PARSED] if isinstance(item, dict)]
        return [body] if isinstance(body, dict) else []
    if source not in _HTTP_SOURCES or "data:" not in text:
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


def _decode_error_body(body: dict[str, Any], *, depth: int = 0) -> tuple[set[str], list[str]]:
    """Error types/codes and human messages of an Anthropic, OpenAI, Google, Bedrock, OpenRouter
    or JSON-RPC error body. Google's ``status`` and ``details`` name the cause more precisely
    than its HTTP code; OpenRouter's ``metadata.raw`` is the upstream's own answer."""
    error = body.get("error")
    node = error if isinstance(error, dict) else body
    codes: set[str] = set()
    for key in ("type", "code", "status"):
        value = node.get(key)
        if isinstance(value, bool) or (key == "status" and not isinstance(value, str)):
            continue
        if isinstance(value, (str, int)) and str(value) != "error":
            codes.add(str(value).strip().lower())
    codes |= google_detail_codes(node.get("details"))
    message = node.get("message", node.get("Message"))
    if not isinstance(message, str) and isinstance(error, str):
        message = error  # some gateways send {"error": "text"}
    messages = [message] if isinstance(message, str) and message else []
    metadata = node.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if isinstance(raw, str) and raw.strip():
        inner = _loads(raw) if raw.lstrip().startswith("{") and depth == 0 else None
        if isinstance(inner, dict):
            inner_codes, inner_messages = _decode_error_body(inner, depth=depth + 1)
            codes |= inner_codes
            messages = inner_messages + messages
        else:
            messages.append(raw[:1024])
    return codes, messages
