"""The neutral events an ACP prompt run yields, and the identity every one of them belongs to.

The ``diagnostic`` marker is decided once, where an ACP chunk is converted (``convert.py``), and
travels unchanged on the frozen event. Accumulation and persistence never read it; the evidence
layer is its only consumer. An event without the marker is ordinary model output.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Correlation:
    """Which prompt attempt evidence belongs to. Generation 0 means "not a prompt generation"."""

    session_id: str
    execution_id: str
    generation: int

    @property
    def can_authorise(self) -> bool:
        return bool(self.session_id) and bool(self.execution_id) and self.generation > 0


@dataclass(frozen=True, slots=True)
class AgentText:
    text: str
    diagnostic: bool = False  # a provider-diagnostic candidate: visible, but not output progress
    # A whole Cursor RetriableError frame by its exact shape (AC .12): redacted as one unit and
    # held back by a Cursor agent's shaper. Not a diagnostic: a transport loss never authorises.
    cursor_frame: bool = False


@dataclass(frozen=True, slots=True)
class AgentThought:
    text: str
    diagnostic: bool = False


@dataclass(frozen=True, slots=True)
class ToolText:
    """A text block of a tool call's content (ACP ``{"type": "content"}`` with a text block)."""

    text: str
    omitted_bytes: int = 0  # what the agent sent beyond the bound, not kept


@dataclass(frozen=True, slots=True)
class ToolDiff:
    """A proposed or made change to one file (ACP ``{"type": "diff"}``); ``old_text`` None is a
    new file."""

    path: str
    old_text: str | None
    new_text: str
    omitted_bytes: int = 0  # a side over the bound is dropped whole (a cut one would lie)


@dataclass(frozen=True, slots=True)
class ToolTerminal:
    """A terminal the agent ran the tool in (ACP ``{"type": "terminal"}``): only its id travels
    in the update, its output is the client's to ask for."""

    terminal_id: str


ToolBlock = ToolText | ToolDiff | ToolTerminal


@dataclass(frozen=True, slots=True)
class ToolLocation:
    """A file the tool call touches (ACP ``ToolCallLocation``)."""

    path: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class AgentToolCall:
    id: str
    title: str
    kind: str  # ACP ToolKind: read | edit | delete | move | search | execute | think | fetch | ...
    status: str  # pending | in_progress | completed | failed
    blocks: tuple[ToolBlock, ...] = ()
    locations: tuple[ToolLocation, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentToolCallUpdate:
    """Fields the update names replace the call's (ACP: content and locations are replaced
    whole, not appended); None means the update left that field as it was."""

    id: str
    status: str | None
    content: str  # the text parts of the update's content, joined; "" when it carried none
    title: str | None = None
    kind: str | None = None
    blocks: tuple[ToolBlock, ...] | None = None
    locations: tuple[ToolLocation, ...] | None = None


@dataclass(frozen=True, slots=True)
class AgentPermission:
    """Our answer to the agent's permission request; a request means a tool is about to run."""

    tool_call_id: str
    granted: bool
    option_kind: str | None  # allow_once | allow_always | reject_once | reject_always | None
    tool_kind: str | None = None  # read, edit, execute, ... as the agent named it
    asked: bool = False  # a person answered (the ASK policy), not the policy alone


@dataclass(frozen=True, slots=True)
class ResponseAttemptBoundary:
    """The provider abandoned its current response attempt and will regenerate it.

    Consumers delete the assistant and thinking rows of this generation created since the last
    commit boundary (a tool call, or the previous response-attempt boundary) before showing any
    replacement output. Emitted only when the abandoned attempt produced output, so a repeated
    boundary with nothing new in between never reaches a consumer.
    """

    attempt: int  # 1 for the first boundary of the generation


@dataclass(frozen=True, slots=True)
class ModelSettled:
    """The agent announced a non-empty current model for the session."""

    model_id: str


@dataclass(frozen=True, slots=True)
class PromptEnd:
    """``session/prompt`` returned a result (not an error)."""

    stop_reason: str  # end_turn | max_tokens | max_turn_requests | refusal | cancelled


AgentEvent = (
    AgentText
    | AgentThought
    | AgentToolCall
    | AgentToolCallUpdate
    | AgentPermission
    | ResponseAttemptBoundary
    | ModelSettled
    | PromptEnd
)
