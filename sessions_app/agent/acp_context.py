"""What an ACP agent is told about the conversation so far.

Every ACP attempt is a fresh agent process with a fresh ACP session, so the agent remembers
nothing of earlier prompts. We hand it the committed conversation as a leading text block and
keep the person's latest prompt as its own final block, so the agent can tell what is being
asked now from what was said before.

Decisions:
- Only what was really said: user prompts and complete assistant answers. Thinking, tool rows
  (they ran inside an agent process that is gone) and incomplete partial output are left out;
  feeding a half answer back as if it were finished would put words in the agent's mouth.
  Retracted rows are deleted, so they never reach this function; rows replaced by Regenerate or
  an edit (``metadata["replaced"]``) are left out too.
- The caller passes rows from ``Session.context_from`` on ("Start fresh" starts a new context).
- Bounded: the most recent turns are kept first; when older turns are dropped the block says
  so, so the agent does not mistake a clipped history for the whole conversation.
- Credential-redacted like the prompt itself; the adapter redacts again on every attempt,
  which is harmless because the credential tier is idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from recovery.redact import redact_credentials, truncate_utf8
from sessions_app.models import Message

CONTEXT_LIMIT_BYTES = 16 * 1024
CONTEXT_HEADER = (
    "Earlier conversation in this session, oldest first, for context only. "
    "The person's new prompt is the next block."
)
OLDER_LEFT_OUT = "(Older turns were left out to keep this short.)"
_SPEAKERS: dict[str, str] = {Message.Role.USER: "User", Message.Role.ASSISTANT: "Assistant"}


@dataclass(frozen=True, slots=True)
class AcpPromptText:
    context: str | None  # the leading block; None when there is nothing earlier to tell
    prompt: str  # the latest user message, unchanged except for credential redaction


def acp_prompt_text(
    *, messages: Sequence[Message], limit_bytes: int = CONTEXT_LIMIT_BYTES
) -> AcpPromptText | None:
    """Split rows (ordered by id, already cut at context_from) into context and latest prompt.

    None when there is no user prompt to send.
    """
    messages = [m for m in messages if not m.metadata.get("off_path")]
    latest = max((i for i, m in enumerate(messages) if m.role == Message.Role.USER), default=None)
    if latest is None:
        return None
    # Rows after the latest prompt belong to its own earlier attempts: never context.
    turns = [_turn(m) for m in messages[:latest] if _is_said(m)]
    return AcpPromptText(
        context=_context_block(turns=turns, limit_bytes=limit_bytes),
        prompt=redact_credentials(messages[latest].text),
    )


def _is_said(message: Message) -> bool:
    if message.metadata.get("replaced") or message.metadata.get("off_path"):
        return False  # replaced by Regenerate or an edit: no longer part of the conversation
    if message.role == Message.Role.USER:
        return bool(message.full_text)
    return (
        message.role == Message.Role.ASSISTANT
        and bool(message.full_text)
        and not message.incomplete
        and message.status == Message.Status.COMPLETE
    )


def _turn(message: Message) -> str:
    return f"{_SPEAKERS[message.role]}: {redact_credentials(message.full_text)}"


def _context_block(*, turns: list[str], limit_bytes: int) -> str | None:
    if not turns:
        return None
    # Reserve room for the header and the "left out" note so the block never exceeds the bound.
    budget = limit_bytes - _size(CONTEXT_HEADER) - _size(OLDER_LEFT_OUT) - 4
    kept: list[str] = []
    for turn in reversed(turns):
        cost = _size(turn) + 2
        if cost > budget:
            if not kept and budget > 0:
                # The newest turn alone is too long: its beginning still says what it was about.
                kept.append(truncate_utf8(turn, limit_bytes=budget))
            break
        kept.append(turn)
        budget -= cost
    parts = [CONTEXT_HEADER]
    if len(kept) < len(turns):
        parts.append(OLDER_LEFT_OUT)
    parts.extend(reversed(kept))
    return "\n\n".join(parts)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))
