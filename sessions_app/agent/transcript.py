"""Build the provider-neutral ModelCall from the committed transcript.

Decisions:
- Partial output (``incomplete`` rows from a stopped or failed attempt) is left out of the
  history: it must never be fed back as if it were complete, and marking it inside
  the text would put our words in the model's mouth. The viewer still sees it, marked.
- Thinking rows are not sent back (providers require their signatures; they add nothing here).
- A tool call without a result (its turn failed or was stopped before the tool ran) is sealed
  with an error result instead of being run later: a tool must never run twice, and we can't know
  whether an earlier worker ran it.
- "Start fresh" sets Session.context_from: rows before it stay visible but are not sent.
- Rows labelled replaced (``metadata["replaced"]``: an answer replaced by Regenerate, a prompt and
  its answer replaced by an edit, a partial that Resume ran again) stay visible but are not sent.
- Rows off the branch shown (``metadata["off_path"]``: the other versions Regenerate and edits
  keep, switched with "< 1 / 2 >") are not sent: the history is the version the person sees.
- ACP agents' tool rows (metadata source "acp") are left out when a session moves to a direct
  provider: those tools ran inside the agent, not as calls of this model.
- Consecutive turns of one role are merged, so dropping rows never yields two user turns in a row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from recovery.model_call import (
    ConversationTurn,
    ModelCall,
    Part,
    TextPart,
    ToolResultPart,
    ToolSpec,
    ToolUsePart,
)
from sessions_app.models import Message, Session

SYSTEM_PROMPT = (
    "You are the agent of Kandev, a task workspace. Answer plainly. Use the tools when they help."
)
SEALED_RESULT = "This tool call was interrupted before it ran; it was not executed."


def _parts_of(messages: list[Message]) -> Iterable[tuple[Literal["user", "assistant"], Part]]:
    answered = {
        m.metadata.get("tool_call_id") for m in messages if m.role == Message.Role.TOOL_RESULT
    }
    for message in messages:
        if message.metadata.get("replaced") or message.metadata.get("off_path"):
            continue  # another version than the one shown (or a partial Resume ran again)
        if message.role == Message.Role.USER:
            yield "user", TextPart(message.full_text)
        elif message.role == Message.Role.ASSISTANT:
            if message.full_text and not message.incomplete:
                yield "assistant", TextPart(message.full_text)
        elif message.role == Message.Role.TOOL_CALL:
            if message.metadata.get("source") == "acp":
                # An ACP agent's own tool, run inside its process: not a call this model made,
                # and sealing it as "never ran" would be untrue.
                continue
            call_id = message.metadata.get("tool_call_id", "")
            yield (
                "assistant",
                ToolUsePart(
                    id=call_id,
                    name=message.metadata.get("name", ""),
                    arguments=message.metadata.get("arguments", {}),
                ),
            )
            if call_id not in answered:
                yield "user", ToolResultPart(call_id, SEALED_RESULT, is_error=True)
        elif message.role == Message.Role.TOOL_RESULT:
            yield (
                "user",
                ToolResultPart(
                    tool_call_id=message.metadata.get("tool_call_id", ""),
                    content=message.full_text,
                    is_error=bool(message.metadata.get("is_error", False)),
                ),
            )


def turns_from_messages(messages: list[Message]) -> tuple[ConversationTurn, ...]:
    turns: list[ConversationTurn] = []
    for role, part in _parts_of(messages):
        if turns and turns[-1].role == role:
            turns[-1] = ConversationTurn(role=role, parts=(*turns[-1].parts, part))
        else:
            turns.append(ConversationTurn(role=role, parts=(part,)))
    # Tool results must open their user turn; text the user typed later follows them.
    return tuple(
        ConversationTurn(
            role=t.role,
            parts=tuple(sorted(t.parts, key=lambda p: not isinstance(p, ToolResultPart))),
        )
        if t.role == "user"
        else t
        for t in turns
    )


def context_rows(*, session_id: int, roles: Sequence[str] = ()) -> list[Message]:
    """The session's rows from its ``context_from`` on, oldest first (``roles``: only those).

    Read fresh on every attempt: "Start fresh" may have moved ``context_from`` since the run was
    built, and what the previous call of the turn showed must be in the next one's history."""
    context_from = Session.objects.values_list("context_from_id", flat=True).get(pk=session_id)
    rows = Message.objects.filter(session_id=session_id)
    if roles:
        rows = rows.filter(role__in=roles)
    if context_from is not None:
        rows = rows.filter(id__gte=context_from)
    return list(rows.order_by("id"))


def model_call_build(*, session_id: int, model: str, tools: tuple[ToolSpec, ...]) -> ModelCall:
    messages = context_rows(session_id=session_id)
    return ModelCall(
        model=model, turns=turns_from_messages(messages), system=SYSTEM_PROMPT, tools=tools
    )
