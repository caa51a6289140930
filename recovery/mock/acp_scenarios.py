"""What the mock ACP agent says: the scenario a prompt names, and the production texts.

A prompt names its scenario with the marker `[[mock:overloaded:2]]` anywhere in it (the spelling
the mock provider takes too, see recovery.mock.marker) or with a leading `/overloaded:2`.
Commands (the rest of the prompt is the question):
  /overloaded[:N]      Claude's 529 JSON-RPC error for the first N prompts (every prompt without N)
  /transport-lost[:N]  the SDK's peer-disconnect error, signature only in JSON-RPC data
  /capacity[:N]        the Codex model-capacity notice as the prompt error
  /cursor:<variant>    one Cursor frame (see CURSOR_FRAMES), then end_turn; run the agent with
                       --identity cursor-agent for Cursor's hold-back to apply
  /diag-matched[:N]    the 529 line as a chunk, then the matching 529 prompt error
  /diag-mismatched[:N] the 529 line as a chunk, then a gateway 500 prompt error
  /diag-prose[:N]      a chunk that classifies as 529 but is not in the error, then the 529 error
  /tool-then-fail[:N]  a read tool call (with a permission request), then the 529 error
  /output-then-fail[:N] ordinary text, then the 529 error
  /write-then-fail[:N] PATH  appends a line to PATH in its working directory (notes.md by
                       default), says nothing, then the 529 error
  /response-retry      abandoned thought and text, the retry marker (twice), replacement text
  /slow[:ms]           the default answer, one chunk every ms (200 by default); honours cancel
  /hang                says nothing and ignores session/cancel
  /crash[:nul]         writes to stderr and exits with status 3 mid-prompt (`nul`: the stderr line
                       holds a NUL byte)
  /tool[:kind] [PATH]  a tool call of that kind (read by default) with a permission request,
                       naming PATH (absolute) or notes.md in its working directory
  /edit NAME TEXT      an edit of NAME (working directory) to TEXT, its diff in the request; the
                       file is written only if allowed (recovery.mock.acp_approvals)
  /exec COMMAND        a command (kind execute, titled COMMAND) asked for and never run
  /read-file NAME      a read tool call that really reads NAME in the working directory (bytes
                       as UTF-8, undecodable ones as lone surrogates, NUL as is) and shows its
                       content as the tool's output, then a thought and an answer quoting it
  /tool-diff PATH       an edit tool call with a diff of PATH (to PATH.new's text, if that exists),
                       in_progress then completed; no permission asked, nothing written
  /tool-terminal[:ms] [FILE]  an execute tool call with ANSI-coloured output (and FILE's text),
                       running for ms, then completed
  /tool-fail           an execute tool call that fails (recovery/mock/acp_tool_content.py)
  /recall              "You said before: ..." with the earlier user prompts it was shown (the
                       leading context block), and the last earlier answer it was shown
  anything else        a thought and a streamed plain answer
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from recovery.mock.marker import marker_find

# The mock's explicit "response attempt abandoned" marker in a session_info_update's _meta. The
# adapter keeps its own copy (recovery.providers.acp.convert), so this process never imports the
# provider SDKs; a unit test keeps the two equal.
RETRY_MARKER = "kandev.dev/responseAttemptRetry"

CLAUDE_529 = (
    "Internal error: API Error: 529 Overloaded. This is a server-side issue, usually "
    "temporary — try again in a moment. If it persists, check https://status.claude.com."
)
CLAUDE_529_CHUNK = (
    "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in "
    "a moment."
)
GATEWAY_500 = (
    "Internal error: API Error: 500 Internal server error. This is a server-side issue, usually "
    "temporary - try again in a moment."
)
# Classifies exactly like the 529 line (anchored signature) but is the agent's own sentence.
CLAUDE_529_PROSE = "API Error: 529 Overloaded. I will wait a little and then try again."
CODEX_CAPACITY = "Selected model is at capacity. Please try a different model."
PEER_DISCONNECTED = "peer disconnected before response"
SERVER_ERROR_KIND = {"errorKind": "server_error"}
WRITTEN_LINE = "written by the mock agent\n"

CURSOR_FRAMES: dict[str, str] = {
    # transient shapes
    "stream-cancel": "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)",
    "canceled-before": (
        "Error: RetriableError: [canceled] HTTP/2 stream closed with error code CANCEL (0x8)"
    ),
    "canceled-after": (
        "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8) [canceled]"
    ),
    "ping": "Error: RetriableError: [unavailable] PING timed out",
    "stalled": "Error: RetriableError: Connection stalled",
    "exhausted": "Error: RetriableError: [resource_exhausted] Error",
    # any other non-empty suffix within 256 UTF-8 bytes is a transport frame too (AC .12, .14)
    "other-suffix": "Error: RetriableError: [internal] stream reset by peer",
    "canceled-only": "Error: RetriableError: [canceled]",
    # negatives: ordinary output
    "prose": "The agent printed Error: RetriableError: Connection stalled earlier.",
    "wrong-prefix": "Error: Retriable: Connection stalled",
    "empty": "Error: RetriableError:",
    "long": "Error: RetriableError: " + "stalled " * 40,
    "context-canceled": "Error: RetriableError: context canceled",
    "deadline": "Error: RetriableError: Connection stalled: context deadline exceeded",
    "escalated": (
        "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8) cancel escalated"
    ),
    "quota": "Error: RetriableError: [resource_exhausted] quota exceeded",
    "auth": "Error: RetriableError: [unavailable] authentication required",
    "invalid-key": "Error: RetriableError: [resource_exhausted] invalid API key",
}
CURSOR_TRANSIENT = frozenset(
    {
        "stream-cancel",
        "canceled-before",
        "canceled-after",
        "ping",
        "stalled",
        "exhausted",
        "other-suffix",
        "canceled-only",
    }
)

# The context block's turns are paragraphs opened by the speaker (sessions_app.agent.acp_context);
# this process never imports Django, so it reads the block by that shape alone.
_TURN = re.compile(
    r"^(?P<speaker>User|Assistant): (?P<text>.*?)(?=\n\n(?:User|Assistant): |\Z)",
    re.MULTILINE | re.DOTALL,
)

_COMMAND = re.compile(r"\A\s*/(?P<name>[a-z][a-z-]*)(?::(?P<arg>[A-Za-z0-9_-]+))?(?:\s+|\Z)")


@dataclass(frozen=True, slots=True)
class Command:
    name: str  # "" for a plain prompt
    arg: str | None
    rest: str

    @property
    def count(self) -> int | None:
        """The N of ``/name:N``: fail the first N prompts. None: every prompt."""
        return int(self.arg) if self.arg is not None and self.arg.isdigit() else None


def command_parse(text: str) -> Command:
    marker = marker_find(text)
    if marker is not None:
        return Command(
            name=marker.name, arg=marker.args[0] if marker.args else None, rest=marker.rest
        )
    found = _COMMAND.match(text)
    if found is None:
        return Command(name="", arg=None, rest=text.strip())
    return Command(name=found["name"], arg=found["arg"], rest=text[found.end() :].strip())


def recall_answer(context: str) -> str:
    """What the /recall scenario says about the earlier conversation it was shown."""
    said = [m["text"] for m in _TURN.finditer(context) if m["speaker"] == "User"]
    answers = [m["text"] for m in _TURN.finditer(context) if m["speaker"] == "Assistant"]
    recalled = "; ".join(said) if said else "nothing"
    last = f" I last answered: {answers[-1]}" if answers else " I have not answered before."
    return f"You said before: {recalled}.{last}"
