"""Where a worker's task enters an agent turn: claim the work, pick the driver, run the turn.

A first run claims a queued generation; a retry claims one scheduled attempt of its retry loop.
Both then go through the same skeleton (``sessions_app.agent.turn.Turn``) with the driver for the
target's kind.
"""

from __future__ import annotations

import datetime as dt
import logging
import random

from django.conf import settings
from django.utils import timezone

from recovery.clock import Clock, SystemClock
from sessions_app import metrics
from sessions_app.agent.acp import AcpDriver
from sessions_app.agent.direct import DirectDriver, StreamOpener
from sessions_app.agent.reports import Driver
from sessions_app.agent.slots import (
    AgentSlot,
    agent_slot_holders,
    agent_slot_take,
    agent_slots_deciding,
    fair_share_allows,
)
from sessions_app.agent.turn import Turn
from sessions_app.approvals.asker import ApprovalAsker
from sessions_app.approvals.services import approvals_cancel
from sessions_app.enqueue import attempt_enqueue, generation_enqueue
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import PromptGeneration, ProviderTarget
from sessions_app.selectors import agent_slot_waiters
from sessions_app.services import generation_claim
from sessions_app.services.ladder import attempt_claim
from sessions_app.services.lifecycle.queued import queue_hold

logger = logging.getLogger(__name__)

STOP_POLL_INTERVAL_S = 0.05


def generation_run(
    *,
    generation_id: int,
    clock: Clock | None = None,
    open_stream: StreamOpener | None = None,
    rng: random.Random | None = None,
    stop_poll_interval_s: float = STOP_POLL_INTERVAL_S,
) -> PromptGeneration | None:
    """Claim and run a generation. Returns None, touching nothing else, for a duplicate delivery
    or a prompt that must wait in line (its sender's limit, or no agent slot for an ACP target,
    or none within its sender's fair share of them; services/lifecycle/queued.py,
    agent/slots.py)."""
    target_kind, person = (
        PromptGeneration.objects.filter(pk=generation_id)
        .values_list("session__target__kind", "requested_by_id")
        .first()
    ) or (None, None)
    slot = None
    if target_kind == ProviderTarget.Kind.ACP:
        slot = _agent_slot(person=person)
        if slot is None:
            _wait_for_agent_slot(generation_id=generation_id)
            return None
    try:
        generation = generation_claim(generation_id=generation_id)
        if generation is None:
            logger.info(
                "generation %s not claimed: already claimed, or held in line", generation_id
            )
            return None
        if generation.claimed_at is not None:
            waited_s = (generation.claimed_at - generation.created_at).total_seconds()
            metrics.observe(metrics.QUEUE_WAIT_SECONDS, max(waited_s, 0.0))
        turn = Turn(
            generation=generation,
            target=generation.session.target,
            clock=clock or SystemClock(),
            rng=rng or random.Random(),
        )
        _turn_execute(turn, open_stream, stop_poll_interval_s=stop_poll_interval_s)
        return generation
    finally:
        if slot is not None:
            slot.release()


def generation_retry(
    *,
    loop_id: int,
    attempt: int,
    clock: Clock | None = None,
    open_stream: StreamOpener | None = None,
    rng: random.Random | None = None,
    stop_poll_interval_s: float = STOP_POLL_INTERVAL_S,
) -> PromptGeneration | None:
    """Run one scheduled retry attempt. The claim re-checks the loop row first: an attempt that
    already ran, or a loop that was cancelled, stopped or disarmed meanwhile, does nothing. An
    ACP attempt that finds no agent slot is scheduled again after KANDEV_ACP_SLOT_WAIT_S."""
    slot = None
    # Resolved once, before the claim: the slot is taken for the target the attempt runs on.
    target, person = _loop_target(loop_id)
    if target is None:
        logger.info("retry attempt %s of loop %s: no such loop; ignored", attempt, loop_id)
        return None
    if target.kind == ProviderTarget.Kind.ACP:
        slot = _agent_slot(person=person)
        if slot is None:
            attempt_enqueue(
                loop_id=loop_id,
                attempt=attempt,
                eta=timezone.now() + dt.timedelta(seconds=settings.KANDEV_ACP_SLOT_WAIT_S),
            )
            return None
    try:
        return _retry_run(
            loop_id=loop_id,
            attempt=attempt,
            target=target,
            clock=clock,
            open_stream=open_stream,
            rng=rng,
            stop_poll_interval_s=stop_poll_interval_s,
        )
    finally:
        if slot is not None:
            slot.release()


def _retry_run(
    *,
    loop_id: int,
    attempt: int,
    target: ProviderTarget,
    clock: Clock | None,
    open_stream: StreamOpener | None,
    rng: random.Random | None,
    stop_poll_interval_s: float,
) -> PromptGeneration | None:
    loop = attempt_claim(loop_id=loop_id, attempt=attempt)
    if loop is None:
        logger.info("retry attempt %s of loop %s is not due; ignored", attempt, loop_id)
        return None
    generation = PromptGeneration.objects.select_related("session", "session__target").get(
        pk=loop.generation_id
    )
    turn = Turn(
        generation=generation,
        target=target,
        clock=clock or SystemClock(),
        rng=rng or random.Random(),
        attempt=loop.attempt + 1,
        retrying=True,
    )
    _turn_execute(turn, open_stream, stop_poll_interval_s=stop_poll_interval_s)
    return generation


def _agent_slot(*, person: int | None) -> AgentSlot | None:
    """A slot of the box for one of ``person``'s turns, or None: none free, the box short of
    memory, or (KANDEV_ACP_FAIR_SHARE) the person at their share while someone owed one waits."""
    directory, count = settings.KANDEV_ACP_SLOT_DIR, settings.KANDEV_ACP_MAX_AGENTS
    holder = "" if person is None else str(person)

    def take() -> AgentSlot | None:
        return agent_slot_take(
            directory=directory,
            count=count,
            min_free_mb=settings.KANDEV_ACP_MIN_FREE_MB,
            holder=holder,
        )

    if not settings.KANDEV_ACP_FAIR_SHARE:
        return take()
    with agent_slots_deciding(directory=directory):
        waiting = {"" if p is None else str(p) for p in agent_slot_waiters()}
        holders = agent_slot_holders(directory=directory, count=count)
        if not fair_share_allows(person=holder, holders=holders, waiting=waiting, count=count):
            logger.info("person %s is at their share of the agent slots; others wait", holder)
            return None
        return take()


def _wait_for_agent_slot(*, generation_id: int) -> None:
    """No agent slot on this box: the prompt stays queued, saying why, and comes back later."""
    generation = PromptGeneration.objects.select_related("session").filter(pk=generation_id).first()
    if generation is None or not queue_hold(
        generation=generation, reason=PromptGeneration.QueueReason.AGENT_SLOT
    ):
        return
    logger.info("generation %s waits for an agent slot", generation_id)
    generation_enqueue(generation_id=generation_id, countdown_s=settings.KANDEV_ACP_SLOT_WAIT_S)


def _loop_target(loop_id: int) -> tuple[ProviderTarget | None, int | None]:
    """The target the loop's next attempt runs on, and whose turn it is. A failover moved the
    loop to another target; otherwise it is the session's own. (None: no such loop.)"""
    loop = RetryLoop.objects.filter(pk=loop_id).values("target_name", "generation_id").first()
    if loop is None:
        return None, None
    generation = (
        PromptGeneration.objects.select_related("session__target")
        .filter(pk=loop["generation_id"])
        .first()
    )
    if generation is None:
        return None, None
    moved_to = ProviderTarget.objects.filter(name=loop["target_name"]).first()
    return moved_to or generation.session.target, generation.requested_by_id


def _turn_execute(
    turn: Turn, open_stream: StreamOpener | None, *, stop_poll_interval_s: float
) -> None:
    """Run the turn with its driver. An ACP agent's requests go to a person through the turn's
    asker; whatever it still has pending when the turn ends is cancelled, so no card waits on
    a turn that is over."""
    asker = None
    if turn.target.kind == ProviderTarget.Kind.ACP:
        asker = ApprovalAsker(generation_id=turn.generation.pk, clock=turn.clock)
    try:
        turn.execute(
            _driver_for(turn, open_stream, asker), stop_poll_interval_s=stop_poll_interval_s
        )
    finally:
        if asker is not None:
            asker.close()
            approvals_cancel(generation_id=turn.generation.pk)


def _driver_for(
    turn: Turn, open_stream: StreamOpener | None, asker: ApprovalAsker | None
) -> Driver:
    """The driver for the turn's target, given what it needs to call the agent (never the Turn
    itself: a driver only reports, sessions_app/agent/reports.py)."""
    if turn.target.kind == ProviderTarget.Kind.ACP:
        return AcpDriver(
            target=turn.target,
            session=turn.session,
            generation=turn.generation,
            attempt=turn.attempt,
            cancel=turn.cancel,
            asker=asker,
        )
    return DirectDriver(
        target=turn.target,
        session=turn.session,
        cancel=turn.cancel,
        clock=turn.clock,
        open_stream=open_stream,
    )
