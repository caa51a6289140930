"""Which version of the conversation a session shows. Messages form a tree (``Message.parent``):
Regenerate hangs a new answer beside the old one, an edit a new prompt beside the one it edits,
and ``Session.tail`` is the last row of the branch shown. Rows off that branch carry
``metadata["off_path"]``: viewers hide them and the history sent to the agent leaves them out,
so what the person sees is what the agent is sent."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from sessions_app.errors import GenerationActive, InvalidInput, SessionNotFound
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.selectors import user_may_view
from sessions_app.services.messages import message_update


def session_tail_move(*, session: Session, tail_id: int | None) -> None:
    """Show the branch ending at ``tail_id`` (None: before the first row) and relabel every row
    whose side of it changed. Called under the session's row lock."""
    parents = dict(Message.objects.filter(session=session).values_list("pk", "parent_id"))
    shown: set[int] = set()
    row_id = tail_id
    while row_id is not None and row_id not in shown:
        shown.add(row_id)
        row_id = parents.get(row_id)
    Session.objects.filter(pk=session.pk).update(tail_id=tail_id)
    session.tail_id = tail_id
    rows = Message.objects.filter(session=session).select_related("session", "generation")
    for row in rows:
        off = row.pk not in shown
        if off != bool(row.metadata.get("off_path")):
            metadata = {k: v for k, v in row.metadata.items() if k != "off_path"}
            if off:
                metadata["off_path"] = True
            message_update(message=row, metadata=metadata)


def _latest_leaf(*, session: Session, row_id: int) -> int:
    """The end of the newest branch below a row: where its conversation was last carried on."""
    children: dict[int, int] = {}
    for pk, parent_id in Message.objects.filter(session=session, parent__isnull=False).values_list(
        "pk", "parent_id"
    ):
        children[parent_id] = max(pk, children.get(parent_id, 0))
    while row_id in children:
        row_id = children[row_id]
    return row_id


def version_show(*, session: Session, user: User, message_id: int) -> None:
    """Show another version of a row ("< 2 / 3 >"): its branch, down to where that branch was
    last carried on. Refused while a turn runs (its rows hang below the shown tail); an id that is
    not a version of a row of this session is InvalidInput and changes nothing."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    with transaction.atomic():
        locked = Session.objects.select_for_update(no_key=True).get(pk=session.pk)
        if PromptGeneration.objects.filter(
            session=locked, state__in=PromptGeneration.ACTIVE_STATES
        ).exists():
            raise GenerationActive(locked.pk)
        row = Message.objects.filter(session=locked, pk=message_id).first()
        if row is None or not row.metadata.get("version"):
            raise InvalidInput("message", "is not a version of a message in this session")
        session_tail_move(session=locked, tail_id=_latest_leaf(session=locked, row_id=row.pk))
    session.tail_id = locked.tail_id
