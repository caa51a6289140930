"""Writes. Plain functions with keyword-only typed arguments, named <entity>_<action>.

Import from here: ``from sessions_app.services import prompt_submit``.
"""

from sessions_app.services.event_log import event_append
from sessions_app.services.lifecycle.generation import (
    generation_await_retry,
    generation_claim,
    generation_create,
    generation_end,
    generation_open,
    generation_retry_claim,
    generation_stop_request,
    generation_supersede_waiting,
    generations_stop_requested,
    retry_loops_cancel,
)
from sessions_app.services.messages import (
    message_append,
    message_create,
    message_finish,
    message_retract,
    message_start_streaming,
    message_update,
)
from sessions_app.services.prompts import (
    answer_regenerate,
    prompt_edit,
    prompt_submit,
    prompt_text_clean,
    retry_cancel,
    session_recover,
    session_stop,
)
from sessions_app.services.sweeps import (
    generation_heartbeat,
    generations_reap_lost,
    generations_requeue_stale,
    ladder_sweep,
)
from sessions_app.services.targets import (
    session_target_set,
    session_target_switch,
    target_create,
    target_fields_check,
    target_update,
)
from sessions_app.services.task_sessions import (
    session_create,
    task_archive,
    task_create,
    task_mark_done,
    task_rename,
    task_reopen,
    task_status_set,
    task_unarchive,
)

__all__ = [
    "answer_regenerate",
    "event_append",
    "generation_await_retry",
    "generation_claim",
    "generation_create",
    "generation_end",
    "generation_heartbeat",
    "generation_open",
    "generation_retry_claim",
    "generation_stop_request",
    "generation_supersede_waiting",
    "generations_reap_lost",
    "generations_requeue_stale",
    "generations_stop_requested",
    "ladder_sweep",
    "message_append",
    "message_create",
    "message_finish",
    "message_retract",
    "message_start_streaming",
    "message_update",
    "prompt_edit",
    "prompt_submit",
    "prompt_text_clean",
    "retry_cancel",
    "retry_loops_cancel",
    "session_create",
    "session_recover",
    "session_stop",
    "session_target_set",
    "session_target_switch",
    "target_create",
    "target_fields_check",
    "target_update",
    "task_archive",
    "task_create",
    "task_mark_done",
    "task_rename",
    "task_reopen",
    "task_status_set",
    "task_unarchive",
]
