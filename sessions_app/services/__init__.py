"""Writes. Plain functions with keyword-only typed arguments, named <entity>_<action>.

Import from here: ``from sessions_app.services import prompt_submit``.
"""

from sessions_app.services.board import (
    session_create,
    session_state_set,
    target_create,
    target_fields_check,
    target_update,
    task_create,
)
from sessions_app.services.event_log import event_append
from sessions_app.services.generations import (
    generation_await_retry,
    generation_begin,
    generation_claim,
    generation_create,
    generation_end,
    generation_heartbeat,
    generation_retry_claim,
    generation_stop_request,
    generation_supersede_waiting,
    generations_reap_lost,
    generations_requeue_stale,
    generations_stop_requested,
    prompt_submit,
    prompt_text_clean,
    session_stop,
)
from sessions_app.services.messages import (
    message_append,
    message_create,
    message_finish,
    message_retract,
    message_start_streaming,
    message_update,
)

__all__ = [
    "event_append",
    "generation_await_retry",
    "generation_begin",
    "generation_claim",
    "generation_create",
    "generation_end",
    "generation_heartbeat",
    "generation_retry_claim",
    "generation_stop_request",
    "generation_supersede_waiting",
    "generations_reap_lost",
    "generations_requeue_stale",
    "generations_stop_requested",
    "message_append",
    "message_create",
    "message_finish",
    "message_retract",
    "message_start_streaming",
    "message_update",
    "prompt_submit",
    "prompt_text_clean",
    "session_create",
    "session_state_set",
    "session_stop",
    "target_create",
    "target_fields_check",
    "target_update",
    "task_create",
]
