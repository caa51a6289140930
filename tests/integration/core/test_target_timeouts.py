"""Stream timeouts per target: a target's own values win, the worker's settings fill the rest,
and the driver uses them on every model call (real Postgres, real SDK, the mock provider)."""

from __future__ import annotations

import random

import pytest
from django.core.exceptions import ValidationError

from recovery.mock.testing import SplitClock
from recovery.providers.base import StreamTimeouts
from sessions_app.agent.runner import generation_run
from sessions_app.agent.targets import stream_timeouts_for
from sessions_app.ladder.models import AttemptRecord
from sessions_app.models import PromptGeneration
from sessions_app.services import prompt_submit
from tests.support.factories import ProviderTargetFactory, SessionFactory

State = PromptGeneration.State


@pytest.mark.django_db
def test_a_target_without_timeouts_gets_the_workers_defaults(settings):
    settings.KANDEV_STREAM_TIMEOUTS = StreamTimeouts(first_chunk_s=50, idle_s=80, no_progress_s=400)
    target = ProviderTargetFactory()

    assert stream_timeouts_for(target) == StreamTimeouts(
        first_chunk_s=50, idle_s=80, no_progress_s=400
    )


@pytest.mark.django_db
def test_a_targets_own_timeouts_win_field_by_field(settings):
    settings.KANDEV_STREAM_TIMEOUTS = StreamTimeouts()
    target = ProviderTargetFactory(name="Reasoner", no_progress_timeout_s=900)

    timeouts = stream_timeouts_for(target)
    assert (timeouts.first_chunk_s, timeouts.idle_s, timeouts.no_progress_s) == (45, 90, 900)


@pytest.mark.django_db
@pytest.mark.parametrize("value", [0, -5, 3601])
def test_a_timeout_out_of_range_is_refused_on_save(value):
    target = ProviderTargetFactory.build(name="Bad", first_chunk_timeout_s=value)
    with pytest.raises(ValidationError, match="first_chunk_timeout_s"):
        target.full_clean()


def run_on(target, owner, text):
    session = SessionFactory(owner=owner, target=target)
    generation = prompt_submit(session=session, user=owner, text=text)
    generation_run(generation_id=generation.pk, clock=SplitClock(), rng=random.Random(7))
    generation.refresh_from_db()
    return generation


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_queue")
def test_a_reasoning_target_that_pings_is_not_cut_by_a_short_first_chunk_timeout(
    owner, mock_provider
):
    target = ProviderTargetFactory(
        name="Pinging", base_url=mock_provider.url, first_chunk_timeout_s=0.3
    )
    generation = run_on(target, owner, "/ping-stall:1200 think hard")

    assert generation.state == State.SUCCEEDED


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_queue")
def test_a_targets_no_progress_timeout_cuts_a_call_that_shows_nothing(owner, mock_provider):
    target = ProviderTargetFactory(
        name="Impatient", base_url=mock_provider.url, no_progress_timeout_s=0.5
    )
    generation = run_on(target, owner, "/ping-stall:3000 think hard")

    record = AttemptRecord.objects.get(generation=generation)
    assert (record.kind, record.exposure) == ("timeout", "metadata")
    assert generation.state == State.WAITING_RETRY  # nothing was shown: retried on the ladder
