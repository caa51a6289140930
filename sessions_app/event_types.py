"""Names and shapes of the durable session events (SessionEvent.type / payload).

Every push to a session's group is one of these, carrying its per-session ``seq``. Viewers apply
them in seq order to a snapshot; applying all events after a snapshot's ``last_seq`` must yield
the same state as a fresh snapshot (tests check exactly that).

Payloads:
  message.created   {"message": MessageDict}
  message.appended  {"id": int, "offset": int, "text": str}
                    coalesced token deltas; ``offset`` is the message's text length before the
                    append, so applying an append twice (or out of order) is detectable.
  message.updated   {"message": MessageDict}          full replacement (final text, status, flags)
  message.deleted   {"ids": [int, ...]}                retraction; late viewers converge
  session.updated   {"state": str, "recovery_actions": [str, ...], "explanation"?: str,
                     "queue"?: QueueDict,
                     "switch_targets"?: [{"id": int, "name": str}, ...],
                     "fresh_restore"?: {"files": int} | {"unavailable": str}}
                    ``explanation`` (redacted) and ``switch_targets`` (the card's "Try another
                    target" choices) only when the session needs attention; ``queue`` only while
                    it is queued (its place in line; sent again when that moves);
                    ``fresh_restore`` when Start fresh can put the workspace back (how many files
                    it would touch) or why it cannot
  generation.updated {"number": int, "state": str}
  notice.upserted   {"notice": NoticeDict}             retry banner (visible ladder)
  notice.deleted    {"ids": [int, ...]}
  approval.upserted {"approval": ApprovalDict}         an agent's permission request for a
                    person (sessions_app/approvals): pending, then how it was decided

QueueDict = {"ahead": int, "reason": "" | "user_limit" | "agent_slot" | "workspace",
             "generation": int}

MessageDict = {"id", "role", "text", "status", "incomplete", "generation" (number or None),
               "metadata", "created" (ISO 8601)}
  metadata the page reads: "author"; "fresh_start" (a Start fresh resend: the "new context"
  divider); "replaced" ("regenerate" | "edit" | "resume": kept, labelled, never sent again);
  "recovered" ({"retries", "code"}: the answer arrived after automatic retries)

Channel-layer group message (what consumers receive):
  {"type": "session.event", "seq": int, "event": str, "payload": dict}
  {"type": "board.changed"}    to board_group_name(owner id) after any of BOARD_EVENTS, and after
                               a task or session of that owner is created, renamed or archived
"""

MESSAGE_CREATED = "message.created"
MESSAGE_APPENDED = "message.appended"
MESSAGE_UPDATED = "message.updated"
MESSAGE_DELETED = "message.deleted"
SESSION_UPDATED = "session.updated"
GENERATION_UPDATED = "generation.updated"
NOTICE_UPSERTED = "notice.upserted"
NOTICE_DELETED = "notice.deleted"
APPROVAL_UPSERTED = "approval.upserted"

ALL = frozenset(
    {
        MESSAGE_CREATED,
        MESSAGE_APPENDED,
        MESSAGE_UPDATED,
        MESSAGE_DELETED,
        SESSION_UPDATED,
        GENERATION_UPDATED,
        NOTICE_UPSERTED,
        NOTICE_DELETED,
        APPROVAL_UPSERTED,
    }
)


# Events that change what a board card shows (a session's state, its generation's, its banner).
BOARD_EVENTS = frozenset({SESSION_UPDATED, GENERATION_UPDATED, NOTICE_UPSERTED, NOTICE_DELETED})


def group_name(session_id: int) -> str:
    return f"session-{session_id}"


def board_group_name(user_id: int) -> str:
    """One group per user: the owner's open boards. A board push is a hint to re-read (no seq,
    no payload worth trusting); the board consumer reads that user's tasks from Postgres."""
    return f"board-user-{user_id}"
