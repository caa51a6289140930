"""One agent turn: the skeleton every prompt generation runs through, first run and retry alike.

    claim (queued -> running, or a scheduled retry attempt) -> the driver for the target's kind
    reports what the agent does -> the turn ends as succeeded, stopped or failed, or waits for a
    retry the ladder scheduled.

Drivers report; the Turn acts. A driver (``DirectDriver``: our own model-call / tool loop against
a provider; ``AcpDriver``: an agent process whose whole prompt is the retry unit) is a generator
of reports that returns one outcome (``sessions_app.agent.reports``); it never sees the Turn.
The Turn does everything that has an effect on the session, on each report as it arrives and
before the driver goes on:

- writes: every row goes through the Turn's ``TurnRows`` (``rows.py``) and its coalescing
  ``StreamWriter``; an abandoned answer is retracted there, and what is still open is sealed;
- "shown": on a retried attempt, the first report that shows something retires the banner;
- admission: the target's shared health is asked before the first call (before the stop
  watcher starts: a held turn costs no more) and at each ``CallStarting``, where a refusal closes
  the driver so the call is never made;
- the ladder: each ``CallSucceeded`` is recorded, and a failed outcome meets the ladder in one
  place (``_end_failed``), which retries only when nothing of the attempt was shown.

``sessions_app.agent.runner`` claims the work and picks the driver.
"""

from __future__ import annotations

import contextlib
import logging
import random
from dataclasses import dataclass, field

from django.conf import settings

from recovery.circuit import Admission
from recovery.clock import Clock
from recovery.guard import CancelToken
from recovery.logs import bound
from sessions_app.agent.coalescer import StreamWriter
from sessions_app.agent.outcome import (
    RunFailure,
    handed_back_outcome,
    ladder_outcome,
    replay_refused_outcome,
    unexpected_outcome,
)
from sessions_app.agent.reports import (
    CallStarting,
    CallSucceeded,
    Driver,
    HandedBack,
    Judged,
    Outcome,
    Report,
    Reports,
    TurnResult,
)
from sessions_app.agent.rows import TurnRows, report_shows
from sessions_app.agent.watch import StopWatcher
from sessions_app.models import Message, PromptGeneration, ProviderTarget
from sessions_app.selectors import target_fallback_names
from sessions_app.services import generation_end
from sessions_app.services.ladder import (
    attempt_committed,
    attempt_defer,
    call_succeeded,
    failure_handle,
)
from sessions_app.services.target_health import health_admit

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Held:
    """The target's shared health refused the turn's next model call: none was made."""

    admission: Admission


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
        self.rows = TurnRows(session=self.session, generation=self.generation, writer=self.writer)
        # A retry attempt retires the banner as soon as something of it reaches the viewer.
        self._banner_pending_retirement = self.retrying

    def execute(self, driver: Driver, *, stop_poll_interval_s: float) -> None:
        # Every log line of the turn carries its id: generation and attempt.
        with bound(turn_id=f"{self.generation.pk}:{self.attempt}"):
            self._execute(driver, stop_poll_interval_s=stop_poll_interval_s)

    def _execute(self, driver: Driver, *, stop_poll_interval_s: float) -> None:
        admission = self._admission(retry=self.retrying)
        if not admission.allowed:
            self._defer(admission, call="retry" if self.retrying else "first call")
            return
        with StopWatcher(
            generation_id=self.generation.pk,
            cancel=self.cancel,
            poll_interval_s=stop_poll_interval_s,
        ):
            try:
                outcome = self._drive(driver.reports())
            except BaseException:
                logger.exception("generation %s crashed", self.generation.pk)
                self.rows.seal(status=Message.Status.ERROR, incomplete=True)
                self._end_with(unexpected_outcome())
                raise
            if isinstance(outcome, _Held):  # a later model call of the turn (after its tools)
                self._defer(outcome.admission, call="a call after tools")
                return
            if isinstance(outcome, (HandedBack, Judged)):
                if self.cancel.cancelled:
                    self._end_stopped()
                else:
                    self._end_failed(outcome)
                return
        if outcome is TurnResult.SUCCEEDED:
            self.rows.seal(status=Message.Status.COMPLETE, incomplete=False)
            generation_end(generation=self.generation, state=PromptGeneration.State.SUCCEEDED)
        else:
            self._end_stopped()

    # ---- acting on the driver's reports ---------------------------------------------------

    def _drive(self, reports: Reports) -> Outcome | _Held:
        """Act on each report, then resume the driver; its return value is the outcome. Leaving
        early (a held call, a crash) closes the driver, which closes what it has open."""
        with contextlib.closing(reports):
            while True:
                try:
                    report = next(reports)
                except StopIteration as end:
                    return end.value
                if isinstance(report, CallStarting):
                    admission = self._admission(retry=False)
                    if not admission.allowed:
                        return _Held(admission)
                else:
                    self._act(report)

    def _act(self, report: Report) -> None:
        if report_shows(report):
            self._shown()
        if isinstance(report, CallSucceeded):
            self.rows.call_ended()
            call_succeeded(
                generation=self.generation,
                target_name=self.target.name,
                clock=self.clock,
                rng=self.rng,
                stats=report.stats,
            )
        else:
            self.rows.apply(report)

    def _shown(self) -> None:
        """Something is about to be put in front of the viewer. On a retried attempt that means
        the provider recovered: the banner goes before the first row shows."""
        if self._banner_pending_retirement:
            self._banner_pending_retirement = False
            attempt_committed(generation_id=self.generation.pk)

    def _admission(self, *, retry: bool) -> Admission:
        """Before every model call (``retry``: the first call of a scheduled retry): every worker
        shares the target's health, and while it is unwell (circuit open, a probe in flight, a
        Retry-After, the retry budget spent) the call waits instead of being made; the turn then
        waits like a failed call, without an attempt spent."""
        return health_admit(target_name=self.target.name, now=self.clock.now(), retry=retry)

    # ---- how the turn ends ----------------------------------------------------------------

    def _defer(self, admission: Admission, *, call: str) -> None:
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
        self.rows.seal(status=Message.Status.COMPLETE, incomplete=True)
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

    def _end_stopped(self) -> None:
        self.rows.seal(status=Message.Status.COMPLETE, incomplete=True)
        generation_end(generation=self.generation, state=PromptGeneration.State.STOPPED)

    def _end_failed(self, failure: HandedBack | Judged) -> None:
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
                self.rows.seal(status=Message.Status.COMPLETE, incomplete=True)
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
                    partial=self.rows.showed_output,
                    detail=failure.detail,
                    effects=failure.replay.effects if failure.replay is not None else None,
                )
            else:
                outcome = ladder_outcome(decision=decision, detail=failure.detail)
        self.rows.seal(status=Message.Status.ERROR, incomplete=True)
        self._end_with(outcome)

    def _end_with(self, outcome: RunFailure) -> None:
        logger.info("generation %s failed: %s", self.generation.pk, outcome.code)
        generation_end(
            generation=self.generation,
            state=PromptGeneration.State.FAILED,
            error_code=outcome.code,
            error_message=outcome.message,
        )
