"""Where a worker's task enters an agent turn: claim the work, pick the driver, run the turn.

A first run claims a queued generation; a retry claims one scheduled attempt of its retry loop.
Both then go through the same skeleton (``sessions_app.agent.turn.Turn``) with the driver for the
target's kind.
"""

from __future__ import annotations

import logging
import random

from recovery.clock import Clock, SystemClock
from sessions_app import metrics
from sessions_app.agent.acp import AcpDriver
from sessions_app.agent.direct import DirectDriver, StreamOpener
from sessions_app.agent.turn import Driver, Turn
from sessions_app.models import PromptGeneration, ProviderTarget
from sessions_app.services import generation_claim
from sessions_app.services.ladder import attempt_claim

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
    """Claim and run a generation. A duplicate delivery returns None without touching anything."""
    generation = generation_claim(generation_id=generation_id)
    if generation is None:
        logger.info("generation %s already claimed; duplicate delivery ignored", generation_id)
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
    turn.execute(_driver_for(turn, open_stream), stop_poll_interval_s=stop_poll_interval_s)
    return generation


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
    already ran, or a loop that was cancelled, stopped or disarmed meanwhile, does nothing."""
    loop = attempt_claim(loop_id=loop_id, attempt=attempt)
    if loop is None:
        logger.info("retry attempt %s of loop %s is not due; ignored", attempt, loop_id)
        return None
    generation = PromptGeneration.objects.select_related("session", "session__target").get(
        pk=loop.generation_id
    )
    # A failover moved the loop to another target; otherwise it is the session's own.
    target = ProviderTarget.objects.filter(name=loop.target_name).first() or generation.session.target
    turn = Turn(
        generation=generation,
        target=target,
        clock=clock or SystemClock(),
        rng=rng or random.Random(),
        attempt=loop.attempt + 1,
        retrying=True,
    )
    turn.execute(_driver_for(turn, open_stream), stop_poll_interval_s=stop_poll_interval_s)
    return generation


def _driver_for(turn: Turn, open_stream: StreamOpener | None) -> Driver:
    if turn.target.kind == ProviderTarget.Kind.ACP:
        return AcpDriver(turn)
    return DirectDriver(turn, open_stream=open_stream)
