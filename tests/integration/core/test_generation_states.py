"""The generation state machine: one owner, a listed set of moves, everything else refused."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.conf import settings

from sessions_app.models import PromptGeneration
from sessions_app.services import generation_claim, generation_end, prompt_submit
from sessions_app.services.generations import TRANSITIONS, ForbiddenTransition, _move, sources_of

pytestmark = pytest.mark.django_db

State = PromptGeneration.State

ALLOWED = {
    (State.QUEUED, State.RUNNING),
    (State.QUEUED, State.STOPPED),
    (State.RUNNING, State.WAITING_RETRY),
    (State.RUNNING, State.SUCCEEDED),
    (State.RUNNING, State.FAILED),
    (State.RUNNING, State.STOPPED),
    (State.WAITING_RETRY, State.RUNNING),
    (State.WAITING_RETRY, State.SUPERSEDED),
    (State.WAITING_RETRY, State.STOPPED),
    (State.WAITING_RETRY, State.FAILED),
}
FORBIDDEN = sorted(
    {(source, target) for source in State for target in State if source != target} - ALLOWED
)


def test_the_machine_has_exactly_the_listed_moves():
    listed = {(source, target) for source, targets in TRANSITIONS.items() for target in targets}
    assert listed == ALLOWED


def test_ended_states_never_move_again():
    for ended in (State.SUCCEEDED, State.FAILED, State.STOPPED, State.SUPERSEDED):
        assert ended not in TRANSITIONS


def generation_in(state: str, session, user) -> PromptGeneration:
    generation = prompt_submit(session=session, user=user, text="hello")
    PromptGeneration.objects.filter(pk=generation.pk).update(state=state)  # test set-up only
    generation.state = state
    return generation


@pytest.mark.parametrize(("source", "destination"), sorted(ALLOWED))
def test_every_listed_move_is_applied_and_announced(source, destination, session, owner):
    generation = generation_in(source, session, owner)
    events_before = session.events.count()

    assert _move(generation, to=destination) is True

    generation.refresh_from_db()
    assert generation.state == destination
    last = session.events.order_by("-seq").first()
    assert session.events.count() == events_before + 1
    assert (last.type, last.payload["state"]) == ("generation.updated", destination)


@pytest.mark.parametrize(("source", "destination"), FORBIDDEN)
def test_every_other_move_is_refused_and_changes_nothing(source, destination, session, owner):
    generation = generation_in(source, session, owner)

    with pytest.raises(ForbiddenTransition):
        _move(generation, to=destination, sources=(source,))

    generation.refresh_from_db()
    assert generation.state == source


def test_a_move_from_a_state_the_row_is_not_in_loses_the_race_quietly(session, owner):
    generation = prompt_submit(session=session, user=owner, text="hello")
    assert generation_claim(generation_id=generation.pk) is not None

    assert generation_claim(generation_id=generation.pk) is None  # a duplicate delivery
    assert generation_end(generation=generation, state=State.SUCCEEDED) is True
    assert generation_end(generation=generation, state=State.STOPPED) is False
    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED


def test_a_queued_generation_can_not_succeed_without_running(session, owner):
    generation = prompt_submit(session=session, user=owner, text="hello")

    assert State.QUEUED not in sources_of(State.SUCCEEDED)
    assert generation_end(generation=generation, state=State.SUCCEEDED) is False
    generation.refresh_from_db()
    assert generation.state == State.QUEUED


def _writes_generation_state(tree: ast.AST) -> list[int]:
    """Lines of ``PromptGeneration.objects....update(state=...)`` calls in a module."""
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("update", "create", "bulk_update"):
            continue
        if not any(keyword.arg == "state" for keyword in node.keywords):
            continue
        receiver = ast.unparse(node.func.value)
        if "PromptGeneration" in receiver:
            lines.append(node.lineno)
    return lines


def test_no_module_but_the_owner_writes_a_generations_state():
    package = Path(settings.BASE_DIR) / "sessions_app"
    owner = package / "services" / "generations.py"
    writers = {
        str(path.relative_to(package)): found
        for path in package.rglob("*.py")
        if path != owner and "migrations" not in path.parts
        if (found := _writes_generation_state(ast.parse(path.read_text())))
    }
    assert writers == {}
    assert _writes_generation_state(ast.parse(owner.read_text())), "the scan finds the owner's writes"
