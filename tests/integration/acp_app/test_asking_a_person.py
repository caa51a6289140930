"""A turn whose agent asks a person: the real mock agent, in the real sandbox, run by the real
worker code on a thread, asks to edit a file or run a command; the request waits as a pending
approval (the session: "Needs approval") until a viewer answers it, the prompt's own timeout
paused meanwhile; the agent gets exactly the answer given."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest
from django.db import connection

from devtools.eventually import eventually
from sessions_app.agent.runner import generation_run
from sessions_app.approvals.models import Approval
from sessions_app.approvals.services import approval_decide
from sessions_app.models import Message, PermissionPolicyChoice, PromptGeneration, Session
from sessions_app.services import prompt_submit, session_stop
from sessions_app.tasks import approvals_sweep

pytestmark = pytest.mark.django_db(transaction=True)

State = PromptGeneration.State
WAIT_S = 30


@pytest.fixture
def asking(acp_target):
    acp_target.permission_policy = PermissionPolicyChoice.ASK
    acp_target.save(update_fields=["permission_policy"])
    return acp_target


def workspace(settings, chat) -> Path:
    return settings.KANDEV_ACP_WORKDIR / f"session-{chat.pk}"


class RunningTurn:
    """A prompt run by the worker code on a thread, as a Celery worker runs it."""

    def __init__(self, chat, owner, text, clock) -> None:
        self.generation = prompt_submit(session=chat, user=owner, text=text)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(clock,), daemon=True)
        self._thread.start()

    def _run(self, clock) -> None:
        try:
            generation_run(generation_id=self.generation.pk, clock=clock, rng=random.Random(7))
        except BaseException as error:  # noqa: BLE001 -- re-raised by ended()
            self.error = error
        finally:
            connection.close()

    def pending(self) -> Approval:
        return eventually(
            lambda: Approval.objects.filter(
                generation=self.generation, state=Approval.State.PENDING
            ).first(),
            timeout=WAIT_S,
            what="the agent's request waiting for a person",
        )

    def ended(self) -> PromptGeneration:
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive(), "the turn did not end"
        if self.error is not None:
            raise self.error
        self.generation.refresh_from_db()
        # Said on failure, so a turn that ended otherwise than expected says why.
        print("turn ended:", self.generation.state, self.generation.error_message)
        return self.generation


def answer_text(chat) -> str:
    return " ".join(
        Message.objects.filter(session=chat, role=Message.Role.ASSISTANT).values_list(
            "text", flat=True
        )
    )


def option_of(approval: Approval, kind: str) -> str:
    return next(o["option_id"] for o in approval.options if o["kind"] == kind)


def test_an_allowed_edit_waits_for_the_person_then_changes_the_file(
    asking, chat, owner, clock, settings
):
    turn = RunningTurn(chat, owner, "/edit notes.md the new plan", clock)

    approval = turn.pending()
    turn.generation.refresh_from_db()
    chat.refresh_from_db()
    assert turn.generation.state == State.WAITING_APPROVAL
    assert chat.state == Session.State.NEEDS_APPROVAL
    assert approval.kind == "edit"
    assert approval.paths and approval.paths[0].endswith("notes.md")
    assert approval.diff["new_text"] == "the new plan\n"
    assert approval.diff["old_text"] is None  # a new file
    assert not (workspace(settings, chat) / "notes.md").exists()  # nothing before the answer

    approval_decide(
        approval_id=approval.pk, user=owner, option_id=option_of(approval, "allow_once")
    )

    assert turn.ended().state == State.SUCCEEDED
    assert (workspace(settings, chat) / "notes.md").read_text() == "the new plan\n"
    assert "I changed notes.md." in answer_text(chat)
    approval.refresh_from_db()
    assert (approval.state, approval.decided_by) == (Approval.State.ALLOWED, owner)
    chat.refresh_from_db()
    assert chat.state != Session.State.NEEDS_APPROVAL


def test_a_rejected_edit_leaves_the_file_as_it_was(asking, chat, owner, clock, settings):
    place = workspace(settings, chat)
    place.mkdir(parents=True, exist_ok=True)
    (place / "notes.md").write_text("the person's own notes\n")
    turn = RunningTurn(chat, owner, "/edit notes.md overwritten", clock)

    approval = turn.pending()
    assert approval.diff["old_text"] == "the person's own notes\n"
    approval_decide(
        approval_id=approval.pk, user=owner, option_id=option_of(approval, "reject_once")
    )

    assert turn.ended().state == State.SUCCEEDED
    assert (place / "notes.md").read_text() == "the person's own notes\n"
    assert "I left notes.md as it was." in answer_text(chat)


def test_a_command_is_asked_with_the_command_shown(asking, chat, owner, clock):
    turn = RunningTurn(chat, owner, "/exec make deploy", clock)

    approval = turn.pending()
    assert (approval.kind, approval.command) == ("execute", "make deploy")
    approval_decide(
        approval_id=approval.pk, user=owner, option_id=option_of(approval, "reject_once")
    )

    assert turn.ended().state == State.SUCCEEDED


def test_stop_while_waiting_cancels_the_request_and_ends_the_turn_with_no_agent_left(
    asking, chat, owner, clock, settings
):
    turn = RunningTurn(chat, owner, "/edit notes.md never written", clock)
    approval = turn.pending()
    assert _agents_running(chat)

    session_stop(session=chat, user=owner)

    assert turn.ended().state == State.STOPPED
    approval.refresh_from_db()
    assert approval.state == Approval.State.CANCELLED
    assert not (workspace(settings, chat) / "notes.md").exists()
    assert not _agents_running(chat)


def _agents_running(chat) -> bool:
    """Whether any process on this machine was started for this session's agent (its sandbox's
    command line names the session's folders)."""
    marker = f"session-{chat.pk}\x00".encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker in cmdline.read_bytes():
                return True
        except OSError:
            continue
    return False


def test_nobody_answering_by_the_deadline_answers_reject_and_says_so(
    asking, chat, owner, clock, settings
):
    turn = RunningTurn(chat, owner, "/edit notes.md too late", clock)
    approval = turn.pending()

    # The turn's own clock passes the deadline: its asker answers reject by itself.
    clock.wall.set(approval.deadline.timestamp() + 1)

    assert turn.ended().state == State.SUCCEEDED
    approval.refresh_from_db()
    assert approval.state == Approval.State.TIMED_OUT
    assert approval.option_id == option_of(approval, "reject_once")
    assert not (workspace(settings, chat) / "notes.md").exists()


def test_allow_always_answers_the_same_kind_of_request_later_in_the_session_without_asking(
    asking, chat, owner, clock, settings
):
    first = RunningTurn(chat, owner, "/edit notes.md one", clock)
    approval = first.pending()
    approval_decide(
        approval_id=approval.pk, user=owner, option_id=option_of(approval, "allow_always")
    )
    assert first.ended().state == State.SUCCEEDED

    second = RunningTurn(chat, owner, "/edit plan.md two", clock)

    assert second.ended().state == State.SUCCEEDED
    assert (workspace(settings, chat) / "plan.md").read_text() == "two\n"
    standing = Approval.objects.get(generation=second.generation)
    assert (standing.state, standing.standing, standing.decided_by) == (
        Approval.State.ALLOWED,
        approval,
        owner,
    )


def test_allow_always_for_a_command_covers_that_command_only(asking, chat, owner, clock):
    first = RunningTurn(chat, owner, "/exec make test", clock)
    approval = first.pending()
    approval_decide(
        approval_id=approval.pk, user=owner, option_id=option_of(approval, "allow_always")
    )
    first.ended()

    other = RunningTurn(chat, owner, "/exec make deploy", clock)
    asked = other.pending()  # another command: asked again

    assert asked.command == "make deploy"
    approval_decide(approval_id=asked.pk, user=owner, option_id=option_of(asked, "reject_once"))
    other.ended()


@pytest.mark.parametrize(
    ("policy", "written"),
    [(PermissionPolicyChoice.ALLOW_ALL, True), (PermissionPolicyChoice.DENY_ALL, False)],
)
def test_a_policy_that_decides_by_itself_never_asks(
    policy, written, acp_target, chat, owner, clock, settings
):
    acp_target.permission_policy = policy
    acp_target.save(update_fields=["permission_policy"])

    turn = RunningTurn(chat, owner, "/edit notes.md decided", clock)

    assert turn.ended().state == State.SUCCEEDED
    assert (workspace(settings, chat) / "notes.md").exists() is written
    assert not Approval.objects.filter(session=chat).exists()


def test_the_sweep_cancels_a_request_whose_turn_no_worker_holds(asking, chat, owner, clock):
    turn = RunningTurn(chat, owner, "/edit notes.md orphaned", clock)
    approval = turn.pending()
    # The worker is gone without a word: the row says the turn ended.
    PromptGeneration.objects.filter(pk=turn.generation.pk).update(state=State.FAILED)

    approvals_sweep()

    approval.refresh_from_db()
    assert approval.state == Approval.State.CANCELLED
    turn.ended()  # its asker reads the cancellation: the agent is told "cancelled"
