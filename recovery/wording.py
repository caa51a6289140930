"""Every sentence a person reads about a failed or retried turn, in one place.

Plain functions and constants, no logic beyond choosing words: the judge, the ladder and the
agent runners decide what happened; this module says it. Callers redact and bound what they pass
in as ``detail`` before it reaches a viewer.
"""

from __future__ import annotations

WORKER_LOST = (
    "The worker running this prompt stopped before it finished. What arrived is kept and marked "
    "incomplete; resume or start fresh to continue."
)
RETRY_CANCELLED = "Automatic retry was cancelled. Resume or start fresh when ready."
UNEXPECTED = "Something went wrong on our side while running this prompt. It was not retried."
NO_PROMPT = "There is no prompt to send yet."

# Why an ACP agent's failed prompt was not sent again automatically, by replay reason.
_ACP_NOT_REPLAYED_BECAUSE = {
    "tool_activity": "The agent had already used a tool, so the prompt was not sent again "
    "automatically.",
    "output_seen": "The agent had already started answering, so the prompt was not sent again "
    "automatically.",
    "diagnostic_mismatch": "The agent reported a different problem before it failed, so the "
    "prompt was not sent again automatically.",
    "diagnostic_text_not_contained": "The agent reported a different problem before it failed, "
    "so the prompt was not sent again automatically.",
    "not_current": "The failure could not be tied to this prompt, so nothing was retried "
    "automatically.",
}
_NOT_KNOWN_TEMPORARY = (
    "This failure is not known to be temporary, so nothing was retried automatically."
)


def tool_loop_limit(model_calls: int) -> str:
    return (
        f"The agent used {model_calls} model calls without finishing its answer, so it was "
        "stopped to be safe."
    )


def target_is_agent(target: str) -> str:
    return f"Target {target} is an ACP agent; this worker runs direct providers only."


# A target's set-up is the operator's: a card about it says so, and never names the variable,
# host, port, path or command behind it (the worker's log does, for staff). The same sentence for
# every way a set-up can be wrong, so a card tells a user nothing about the server's insides.
ASK_AN_OPERATOR = "Ask an operator to check this target, then resume."
AUTH_ADVICE = "Ask an operator to check this target's credentials, then resume."
CREDENTIALS_ADVICE = "Ask an operator to add credentials for this target, then resume."


def target_not_allowed(target: str) -> str:
    return f"Target {target} can't be used as it is set up. {ASK_AN_OPERATOR}"


def target_key_missing(target: str) -> str:
    return f"Target {target} can't be called: its API key is not available. {ASK_AN_OPERATOR}"


def target_key_unnamed(target: str) -> str:
    return f"Target {target} can't be called: no API key is configured for it. {ASK_AN_OPERATOR}"


def target_no_command(target: str) -> str:
    return f"Target {target} has no usable agent command line."


def with_detail(message: str, detail: str) -> str:
    """A card's sentence followed by the (redacted) technical detail, when there is one."""
    return f"{message} Details: {detail}" if detail else message


def acp_not_replayed(*, reason: str, replay_reason: str, partial: bool, detail: str) -> str:
    """The card for an agent's failed prompt that was not sent again automatically."""
    parts = [f"{reason}.", _ACP_NOT_REPLAYED_BECAUSE.get(replay_reason, _NOT_KNOWN_TEMPORARY)]
    if partial:
        parts.append("What the agent showed is kept and marked incomplete.")
    parts.append("Resume or start fresh when ready.")
    return with_detail(" ".join(parts), detail)
