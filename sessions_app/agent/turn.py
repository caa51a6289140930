"""One agent turn: the skeleton every prompt generation runs through, first run and retry alike.

    claim (queued -> running, or a scheduled retry attempt) -> the driver for the target's kind
    streams rows -> the turn ends as succeeded, stopped or failed, or waits for a retry the
    ladder scheduled.

The skeleton owns what both kinds of agent share: the stop watcher and cancel token, the
coalescing writer, retiring the banner when a retried attempt first shows something, and the one
place a failure meets the ladder. A driver owns only how its agent is called: ``DirectDriver``
(our own model-call / tool loop against a provider) or ``AcpDriver`` (an agent process whose
whole prompt is the retry unit). ``sessions_app.agent.runner`` claims the work and picks the
driver.
"""

from __future__ import annotations

import enum
import logging
import random
from dataclasses import dataclass, field
from typing import Protocol

from django.conf import settings

from recovery.circuit import Admission
from recovery.clock import Clock
from recovery.guard import CancelToken
from recovery.judge import CallStats
from recovery.logs import bound
from recovery.replay import ReplayFacts
from recovery.taxonomy import Evidence
from sessions_app.agent.coalescer import StreamWriter
from sessions_app.agent.outcome import (
    RunFailure,
    handed_back_outcome,
    ladder_outcome,
    replay_refused_outcome,
    unexpected_outcome,
)
from sessions_app.agent.watch import StopWatcher
from sessions_app.models import Message, PromptGeneration, ProviderTarget
from sessions_app.selectors import target_fallback_names
from sessions_app.services import generation_end
from sessions_app.services.ladder import attempt_committed, attempt_defer, failure_handle
from sessions_app.services.target_health import health_admit

logger = logging.getLogger(__name__)


class TurnResult(enum.StrEnum):
    SUCCEEDED = "succeeded"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class HandedBack:
    """The turn ends without a provider failure to judge: the target can't be called at all
    (no key, no command) or the agent loop hit its limit. Never retried."""

    code: str
    detail: str


@dataclass(frozen=True, slots=True)
class Judged:
    """A failed provider call (direct) or prompt (ACP, with its ``replay`` facts) for the ladder
    to judge."""

    evidence: Evidence
    detail: str
    model: str
    stats: CallStats | None = None
    replay: ReplayFacts | None = None


TurnFailure = HandedBack | Judged


class TurnFailed(Exception):
    def __init__(self, failure: TurnFailure) -> None:
        super().__init__(failure)
        self.failure = failure


class CallHeld(Exception):
    """The target's shared health refused the turn's next model call: none was made."""

    def __init__(self, admission: Admission) -> None:
        super().__init__(admission.refusal)
        self.admission = admission


class Driver(Protocol):
    def run(self, turn: Turn) -> TurnResult:
        """Drive the agent, writing rows through ``turn``; raise TurnFailed when it failed."""
        ...

    def seal(self, *, status: str, incomplete: bool) -> None:
        """Close every row the driver still holds open."""
        ...

    @property
    def showed_output(self) -> bool:
        """Whether anything of this attempt is on screen (for the card's wording)."""
        ...


@dataclass
class Turn:
    generation: PromptGeneration
    target: ProviderTarget
    clock: Clock
    rng: random.Random
    attempt: int = 1  # 1 for the first run, n + 1 for the n-th scheduled retry
    retrying: bool = False
    cancel: CancelToken = field(default_factory=CancelToken)

    def __post_init__(self) -> None:
        self.session = self.generation.session
        # The retry budget's turn cap counts from here (each call's deadline from its failure).
        self.started_at = self.clock.now()
        self.writer = StreamWriter(
            session=self.session,
            generation=self.generation,
            flush_interval_s=settings.KANDEV_STREAM_FLUSH_INTERVAL,
            # This process's share of the box's budget.
            flushes_per_s=settings.KANDEV_STREAM_FLUSHES_PER_S / settings.KANDEV_WORKER_PROCESSES,
            clock=self.clock,
        )
        # A retry attempt retires the banner as soon as something of it reaches the viewer.
        self._banner_pending_retirement = self.retrying

    def shown(self) -> None:
        """The driver is about to put something in front of the viewer. On a retried attempt
        that means the provider recovered: the banner goes before the first row shows."""
        if self._banner_pending_retirement:
            self._banner_pending_retirement = False
            attempt_committed(generation_id=self.generation.pk)

    def admit_call(self, *, retry: bool) -> None:
        """Before every model call (``retry``: the first call of a scheduled retry): every worker
        shares the target's health, and while it is unwell (circuit open, a probe in flight, a
        Retry-After, the retry budget spent) the call waits instead of being made. Raises
        CallHeld then; the turn waits like a failed call, without an attempt spent."""
        admission = health_admit(target_name=self.target.name, now=self.clock.now(), retry=retry)
        if not admission.allowed:
            raise CallHeld(admission)

    def execute(self, driver: Driver, *, stop_poll_interval_s: float) -> None:
        # Every log line of the turn carries its id: generation and attempt.
        with bound(turn_id=f"{self.generation.pk}:{self.attempt}"):
            self._execute(driver, stop_poll_interval_s=stop_poll_interval_s)

    def _execute(self, driver: Driver, *, stop_poll_interval_s: float) -> None:
        # The first call is asked for before the stop watcher starts: a held turn costs no more.
        try:
            self.admit_call(retry=self.retrying)
        except CallHeld as held:
            self._defer(driver, held.admission, call="retry" if self.retrying else "first call")
            return
        with StopWatcher(
            generation_id=self.generation.pk,
            cancel=self.cancel,
            poll_interval_s=stop_poll_interval_s,
        ):
            try:
                result = driver.run(self)
            except CallHeld as held:  # a later model call of the turn (after its tools ran)
                self._defer(driver, held.admission, call="a call after tools")
                return
            except TurnFailed as failed:
                if self.cancel.cancelled:
                    self._end_stopped(driver)
                else:
                    self._end_failed(driver, failed.failure)
                return
            except BaseException:
                logger.exception("generation %s crashed", self.generation.pk)
                driver.seal(status=Message.Status.ERROR, incomplete=True)
                self._end_with(unexpected_outcome())
                raise
        if result is TurnResult.SUCCEEDED:
            driver.seal(status=Message.Status.COMPLETE, incomplete=False)
            generation_end(generation=self.generation, state=PromptGeneration.State.SUCCEEDED)
        else:
            self._end_stopped(driver)

    def _defer(self, driver: Driver, admission: Admission, *, call: str) -> None:
        decision = attempt_defer(
            generation=self.generation,
            admission=admission,
            target_name=self.target.name,
            provider=self.target.name,
            model=self.target.model,
            turn_started_at=self.started_at,
            clock=self.clock,
            rng=self.rng,
        )
        driver.seal(status=Message.Status.COMPLETE, incomplete=True)
        if decision.is_automatic:
            logger.info(
                "generation %s: %s held back by %s's health (%s)",
                self.generation.pk,
                call,
                self.target.name,
                admission.refusal,
            )
            return
        self._end_with(ladder_outcome(decision=decision, detail=""))

    def _end_stopped(self, driver: Driver) -> None:
        driver.seal(status=Message.Status.COMPLETE, incomplete=True)
        generation_end(generation=self.generation, state=PromptGeneration.State.STOPPED)

    def _end_failed(self, driver: Driver, failure: TurnFailure) -> None:
        """The one place a failed attempt meets the recovery ladder."""
        if isinstance(failure, HandedBack):
            outcome = handed_back_outcome(code=failure.code, detail=failure.detail)
        else:
            judgement = failure_handle(
                generation=self.generation,
                evidence=failure.evidence,
                target_name=self.target.name,
                provider=self.target.name,
                model=failure.model,
                fallbacks=target_fallback_names(target=self.session.target),
                turn_started_at=self.started_at,
                clock=self.clock,
                rng=self.rng,
                stats=failure.stats,
                replay=failure.replay,
            )
            decision = judgement.decision
            if decision.is_automatic:
                # Pre-exposure by construction: nothing of this attempt that the retry would
                # repeat reached a viewer. What is open (a provider diagnostic line) stays,
                # marked as part of an attempt that did not finish.
                driver.seal(status=Message.Status.COMPLETE, incomplete=True)
                logger.info(
                    "generation %s: %s, %s scheduled",
                    self.generation.pk,
                    decision.classification.code,
                    decision.action,
                )
                return
            if judgement.replay is not None and not judgement.replay.retry_allowed:
                outcome = replay_refused_outcome(
                    classification=judgement.classification,
                    reason=judgement.replay.reason,
                    partial=driver.showed_output,
                    detail=failure.detail,
                )
            else:
                outcome = ladder_outcome(decision=decision, detail=failure.detail)
        driver.seal(status=Message.Status.ERROR, incomplete=True)
        self._end_with(outcome)

    def _end_with(self, outcome: RunFailure) -> None:
        logger.info("generation %s failed: %s", self.generation.pk, outcome.code)
        generation_end(
            generation=self.generation,
            state=PromptGeneration.State.FAILED,
            error_code=outcome.code,
            error_message=outcome.message,
        )
