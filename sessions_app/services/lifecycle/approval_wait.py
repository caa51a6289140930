"""A running turn waits for a person's approval, and runs again once it is answered.

The worker keeps holding the turn meanwhile (it heartbeats, and the turn still counts towards its
person's running limit), so these are two plain moves of the generation table.
"""

from __future__ import annotations

from django.utils import timezone

from sessions_app.models import PromptGeneration
from sessions_app.services.lifecycle.generation import _move

State = PromptGeneration.State


def generation_await_approval(*, generation: PromptGeneration) -> bool:
    """The agent asked a person: the running generation waits (the session: "Needs approval")."""
    return _move(generation, to=State.WAITING_APPROVAL, sources=(State.RUNNING,))


def generation_approval_resume(*, generation: PromptGeneration) -> bool:
    """The person answered (or the wait ended): the generation runs again."""
    return _move(
        generation,
        to=State.RUNNING,
        sources=(State.WAITING_APPROVAL,),
        heartbeat_at=timezone.now(),
    )
