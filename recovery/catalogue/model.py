"""What a catalogue rule is, and the digested evidence rules are matched against.

A rule is a frozen value, not code: its conditions are data (statuses, provider error types,
evidence kinds and sources, one anchored line pattern), so the registry reads as a table and the
pre-check can be derived from it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass

from recovery.taxonomy import Code, Confidence, Evidence, Kind, Phase, Source

# Cancellation words mean the caller (or the agent's own supervisor) stopped the work; a line
# carrying them is never evidence that the transport failed on its own.
CANCELLATION_WORDS = re.compile(
    r"context canceled|context cancelled|context deadline exceeded|cancel escalated", re.IGNORECASE
)


class Tier(enum.IntEnum):
    """Lower ranks first. The registry order must respect it (a test enforces that)."""

    STRUCTURED = 1  # HTTP status, provider error type, JSON-RPC code, adapter-observed kind
    EXACT = 2  # an exact provider signature, anchored at the start of one line
    BROAD = 3  # a provider token anywhere on a line, or an adapter's coarse judgement


@dataclass(frozen=True, slots=True)
class Facts:
    """Evidence digested once per classification: what structured rules and line rules read."""

    evidence: Evidence
    # The response's HTTP status; for an HTTP or SSE error inside a 200 (or status-less) stream,
    # the status its error body names (OpenRouter, LiteLLM), else the 200 or None itself.
    status: int | None
    provider_codes: frozenset[str]  # lower-cased error types and codes (header, body, JSON-RPC)
    lines: tuple[str, ...]  # stripped, non-empty lines of provider text (JSON: messages only)
    needles_found: frozenset[str]  # the pre-check's hits: a line rule needs one of its own


@dataclass(frozen=True, slots=True)
class Rule:
    id: str  # stable and versioned: change the meaning, bump the version
    code: Code
    tier: Tier
    why_narrow: str  # why the rule is exactly as broad as it is
    confidence: Confidence = Confidence.HIGH
    statuses: frozenset[int] = frozenset()
    provider_codes: frozenset[str] = frozenset()
    kinds: frozenset[Kind] = frozenset()
    phases: frozenset[Phase] = frozenset()
    sources: frozenset[Source] = frozenset()  # empty: any source
    line: re.Pattern[str] | None = None  # matched with re.match on each stripped line
    line_check: Callable[[str], bool] | None = None  # for shapes a regex states badly
    # Lower-case literals, one of which any line this rule matches contains: the pre-check's,
    # so only for a text rule that no structured condition gates (see ``gated_by_precheck``).
    needles: tuple[str, ...] = ()
    veto_cancellation: bool = False

    @property
    def reads_text(self) -> bool:
        return self.line is not None or self.line_check is not None

    @property
    def is_structured(self) -> bool:
        return bool(self.statuses or self.provider_codes or self.kinds or self.phases)

    @property
    def gated_by_precheck(self) -> bool:
        """A text rule only the pre-check's needles gate. A structured rule that also reads a
        line is a candidate only when its status or code is present (rare: an error body), so
        it adds nothing to the scan every ordinary chunk of prose pays for."""
        return self.reads_text and not self.is_structured

    def matches(self, facts: Facts) -> bool:
        if not self._structured_conditions_hold(facts):
            return False
        if not self.reads_text:
            return True
        if self.gated_by_precheck and not any(
            needle in facts.needles_found for needle in self.needles
        ):
            return False
        return any(self.matches_line(line) for line in facts.lines)

    def matches_line(self, line: str) -> bool:
        if self.veto_cancellation and CANCELLATION_WORDS.search(line):
            return False
        if self.line is not None and not self.line.match(line):
            return False
        return self.line_check is None or self.line_check(line)

    def _structured_conditions_hold(self, facts: Facts) -> bool:
        evidence = facts.evidence
        if self.statuses and facts.status not in self.statuses:
            return False
        if self.provider_codes and not (self.provider_codes & facts.provider_codes):
            return False
        if self.kinds and evidence.kind not in self.kinds:
            return False
        if self.sources and evidence.source not in self.sources:
            return False
        return not self.phases or evidence.phase in self.phases
