"""Approvals as rows: the agent's request is written pending with its options, the first answer
wins, a timeout rejects, a Stop cancels, and the session shows "Needs approval" meanwhile."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app.approvals.models import Approval
from sessions_app.approvals.selectors import session_approvals
from sessions_app.approvals.services import (
    approval_decide,
    approval_request,
    approval_resume,
    approvals_cancel,
    approvals_expire,
)
from sessions_app.errors import ApprovalDecided, ApprovalNotFound, InvalidInput
from sessions_app.models import PromptGeneration, Session
from sessions_app.services import generation_claim, prompt_submit
from sessions_app.services.lifecycle.generation import generation_end
from sessions_app.services.sweeps import generations_reap_lost
from sessions_app.tasks import approvals_sweep, retry_attempt, run_generation

pytestmark = pytest.mark.django_db(transaction=True)

OPTIONS = [
    {"option_id": "yes", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "no", "name": "Reject", "kind": "reject_once"},
]


def pending(session, user, **overrides) -> Approval:
    generation = prompt_submit(session=session, user=user, text="edit it")
    generation = generation_claim(generation_id=generation.pk)
    fields = {
        "tool_call_id": "call-1",
        "kind": "edit",
        "title": "Edit notes.txt",
        "command": "",
        "paths": ["notes.txt"],
        "diff": {"path": "notes.txt", "old_text": "a\n", "new_text": "b\n"},
        "options": OPTIONS,
    } | overrides
    return approval_request(generation=generation, **fields)


def test_it_writes_the_request_pending_with_the_agents_options_and_the_session_needs_approval(
    session, owner
):
    approval = pending(session, owner)

    approval.refresh_from_db()
    session.refresh_from_db()
    assert approval.state == Approval.State.PENDING
    assert approval.options == OPTIONS
    assert approval.generation.state == PromptGeneration.State.WAITING_APPROVAL
    assert session.state == Session.State.NEEDS_APPROVAL
    assert session.events.filter(type="approval.upserted").count() == 1


def test_it_lets_the_first_answer_win_and_refuses_the_second_when_both_decide(session, owner):
    approval = pending(session, owner)

    approval_decide(approval_id=approval.pk, user=owner, option_id="yes")
    with pytest.raises(ApprovalDecided):
        approval_decide(approval_id=approval.pk, user=owner, option_id="no")

    approval.refresh_from_db()
    assert (approval.state, approval.option_id, approval.decided_by) == ("allowed", "yes", owner)


def test_it_lets_exactly_one_of_two_concurrent_decides_win(session, owner):
    approval = pending(session, owner)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def decide(option_id: str) -> None:
        barrier.wait()
        try:
            approval_decide(approval_id=approval.pk, user=owner, option_id=option_id)
            outcomes.append("won")
        except ApprovalDecided:
            outcomes.append("409")
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(o,)) for o in ("yes", "no")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["409", "won"]
    approval.refresh_from_db()
    assert approval.state in ("allowed", "rejected")


def test_it_refuses_an_option_the_agent_did_not_offer(session, owner):
    approval = pending(session, owner)

    with pytest.raises(InvalidInput):
        approval_decide(approval_id=approval.pk, user=owner, option_id="sudo")
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def test_it_hides_a_foreign_approval_as_not_found(session, owner, stranger):
    approval = pending(session, owner)

    with pytest.raises(ApprovalNotFound):
        approval_decide(approval_id=approval.pk, user=stranger, option_id="yes")
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def test_it_rejects_with_the_agents_refusal_when_the_deadline_passed(session, owner):
    approval = pending(session, owner)
    assert approvals_expire(now=approval.deadline - dt.timedelta(seconds=1)) == []

    assert approvals_expire(now=approval.deadline) == [approval.pk]

    approval.refresh_from_db()
    assert (approval.state, approval.option_id) == (Approval.State.TIMED_OUT, "no")
    with pytest.raises(ApprovalDecided):
        approval_decide(approval_id=approval.pk, user=owner, option_id="yes")


def test_it_cancels_the_pending_approvals_of_a_stopped_turn(session, owner):
    approval = pending(session, owner)

    assert approvals_cancel(generation_id=approval.generation_id) == [approval.pk]

    approval.refresh_from_db()
    assert approval.state == Approval.State.CANCELLED
    assert generation_end(generation=approval.generation, state=PromptGeneration.State.STOPPED)
    session.refresh_from_db()
    assert session.state == Session.State.IDLE


def test_it_runs_the_turn_again_once_the_person_answered(session, owner):
    approval = pending(session, owner)
    approval_decide(approval_id=approval.pk, user=owner, option_id="yes")

    assert approval_resume(generation=approval.generation)

    session.refresh_from_db()
    assert session.state == Session.State.RUNNING


def test_it_reaps_a_turn_waiting_for_approval_whose_worker_went_silent(session, owner):
    approval = pending(session, owner)
    PromptGeneration.objects.filter(pk=approval.generation_id).update(
        heartbeat_at=timezone.now() - dt.timedelta(seconds=120)
    )

    assert generations_reap_lost(silent_for_s=60) == [approval.generation_id]


def test_the_beats_sweep_task_rejects_an_overdue_approval(session, owner):
    approval = pending(session, owner)
    Approval.objects.filter(pk=approval.pk).update(deadline=timezone.now())

    assert approvals_sweep.apply().get() == 1

    approval.refresh_from_db()
    assert approval.state == Approval.State.TIMED_OUT


def test_a_late_viewer_reads_the_pending_card_with_its_diff_and_options(session, owner):
    approval = pending(session, owner)

    [card] = session_approvals(session_id=session.pk)

    assert (card["id"], card["state"], card["options"]) == (approval.pk, "pending", OPTIONS)
    assert card["diff"] == {"path": "notes.txt", "old_text": "a\n", "new_text": "b\n"}


def test_a_turns_task_may_outlive_the_global_limits_by_the_time_people_may_take(settings):
    waited = int(settings.KANDEV_APPROVAL_TIMEOUT)

    for task in (run_generation, retry_attempt):
        assert task.soft_time_limit == settings.CELERY_TASK_SOFT_TIME_LIMIT + waited
        assert task.time_limit == settings.CELERY_TASK_TIME_LIMIT + waited
    # Redis would hand a still-running turn's message to another worker after this long.
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout")
    assert visibility is None or visibility > run_generation.time_limit
