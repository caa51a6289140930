"""Put a session in a state for a test the way the product would: through the declared moves.

``session_walk_to`` follows the shortest path of ``SESSION_MOVES`` from where the session is, so
its task's status and its viewers' events are what the lifecycle writes, never a bare UPDATE.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from sessions_app.models import Session
from sessions_app.services.lifecycle.session_state import SESSION_MOVES, _session_move


def _path(source: str, target: str) -> list[str]:
    came_from: dict[str, str | None] = {source: None}
    frontier = deque([source])
    while frontier:
        state = frontier.popleft()
        if state == target:
            break
        for step in sorted(SESSION_MOVES.get(state, ())):
            if step not in came_from:
                came_from[step] = state
                frontier.append(step)
    path, state = [], target
    while state != source:
        path.append(state)
        state = came_from[state]
    return path[::-1]


def session_walk_to(
    *,
    session: Session,
    state: str,
    recovery_actions: Sequence[str] = (),
    explanation: str = "",
) -> None:
    """Move ``session`` to ``state`` through declared moves (none when it is already there)."""
    session.refresh_from_db(fields=["state"])
    for step in _path(session.state, state):
        last = step == state
        _session_move(
            session=session,
            source=session.state,
            to=step,
            recovery_actions=recovery_actions if last else (),
            explanation=explanation if last else "",
        )
