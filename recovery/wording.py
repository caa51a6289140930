"""Every sentence a person reads about a failure: banners, cards and their reasons' phrasing.

Honest and plain: say what happened, what happens next, and what the person can do. The reason a
sentence starts from is the code's label in ``taxonomy.CODE_POLICY`` (data, defined with the
code's class so a new code cannot lack one); everything built from it is here. Plain functions
and constants: nothing here decides anything or reaches a provider.
"""

from __future__ import annotations

import math

from recovery.replay import ReplayReason
from recovery.taxonomy import CODE_POLICY, Code

_PERSISTED = {
    Code.PROVIDER_OVERLOADED: "The provider remained overloaded",
    Code.PROVIDER_UNAVAILABLE: "The provider remained unavailable",
    Code.NETWORK_UNAVAILABLE: "The network remained unavailable",
    Code.MODEL_CAPACITY: "The model remained at capacity",
    Code.RATE_LIMITED: "The provider kept rate-limiting requests",
    Code.AGENT_TRANSPORT_LOST: "The connection to the agent kept dropping",
    Code.PROVIDER_RESOURCE_EXHAUSTED: "The provider's resources remained exhausted",
    Code.TRUNCATED_STREAM: "The provider kept cutting its response short",
}
# Config problems point to an operator: only staff set targets up (and ordinary users must not
# learn hosts, variables or ports from a card).
ASK_AN_OPERATOR = "Ask an operator to check this target, then resume."
AUTH_ADVICE = "Ask an operator to check this target's credentials, then resume."
CREDENTIALS_ADVICE = "Ask an operator to add credentials for this target, then resume."
_HARD_ADVICE = {
    Code.AUTH_REQUIRED: AUTH_ADVICE,
    Code.MISSING_CREDENTIALS: CREDENTIALS_ADVICE,
    Code.SUBSCRIPTION_REQUIRED: "This model needs a subscription the account does not have.",
    Code.QUOTA_LIMITED: "The quota resets on the provider's schedule; resume after it resets.",
    Code.BILLING_LIMITED: "The account is out of credit or at its spending limit, which waiting "
    "does not change. Add credit or raise the limit, then resume.",
    Code.MODEL_UNAVAILABLE: "Choose another model, then resume.",
    Code.PROVIDER_NOT_CONFIGURED: ASK_AN_OPERATOR,
    Code.INVALID_REQUEST: "The provider rejected this request as sent, so resuming would fail "
    "the same way. Start fresh to send your last message in a new context.",
    Code.REQUEST_TOO_LARGE: "The request is larger than this target accepts at once (its size "
    "or tokens-per-minute limit), so sending it again would fail the same way. Start fresh with "
    "a shorter message, or ask an operator for a target with a higher limit.",
    Code.CONTEXT_LENGTH_EXCEEDED: "It no longer fits in the model's context window, so resuming "
    "would fail the same way. Start fresh to send your last message in a new context.",
    Code.TLS_CERTIFICATE_FAILED: "The connection was stopped before anything was sent, because "
    f"the certificate is not trusted. {ASK_AN_OPERATOR}",
    Code.HOST_NOT_FOUND: "The target's base URL names a host that does not exist. "
    + ASK_AN_OPERATOR,
    Code.CONNECTION_REFUSED: "Nothing accepts connections at the target's base URL. "
    + ASK_AN_OPERATOR,
    Code.MALFORMED_STREAM: "Its reply could not be read; resume to try again.",
}
_RESETTING = frozenset({Code.QUOTA_LIMITED, Code.RATE_LIMITED})
# Failures whose card says resuming would fail the same way: the card offers no Resume for them.
RESUME_WOULD_REPEAT = frozenset(
    {Code.INVALID_REQUEST, Code.REQUEST_TOO_LARGE, Code.CONTEXT_LENGTH_EXCEEDED}
)


def duration_phrase(seconds: float) -> str:
    """A short, rounded-up duration: "9 s", "1 min 30 s", "about 3 hours"."""
    whole = max(math.ceil(seconds), 0)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    if whole < 86_400:
        hours = round(whole / 3600)
        return "about 1 hour" if hours == 1 else f"about {hours} hours"
    days = round(whole / 86_400)
    return "about 1 day" if days == 1 else f"about {days} days"


def _reason(code: Code) -> str:
    return CODE_POLICY[code].reason


def retry_message(code: Code, *, wait_s: float, attempt: int, max_attempts: int) -> str:
    when = "now" if wait_s <= 0 else f"in {duration_phrase(wait_s)}"
    return f"{_reason(code)}. Retrying {when} (attempt {attempt} of {max_attempts})."


def wait_for_reset_message(code: Code, *, wait_s: float, attempt: int, max_attempts: int) -> str:
    return (
        f"{_reason(code)}. Waiting {duration_phrase(wait_s)} for the limit to reset "
        f"(attempt {attempt} of {max_attempts})."
    )


def failover_message(code: Code, *, target: str) -> str:
    return f"{_reason(code)}. Switching to {target}."


def exhausted_message(code: Code, *, attempts: int) -> str:
    if attempts == 0:
        return f"{_reason(code)}. Automatic retries are turned off on this server."
    noun = "attempt" if attempts == 1 else "attempts"
    return f"{_persisted(code)} after {attempts} {noun}."


def out_of_time_message(code: Code, *, elapsed_s: float) -> str:
    return f"{_persisted(code)} for {duration_phrase(elapsed_s)}; automatic retries have stopped."


def turn_cap_message(code: Code, *, turn_elapsed_s: float) -> str:
    return (
        f"{_reason(code)}. This turn has already spent {duration_phrase(turn_elapsed_s)}, the "
        "most automatic recovery may take for one turn; automatic "
        "retries have stopped."
    )


def hard_message(code: Code, *, resets_in_s: float | None) -> str:
    if code is Code.CANCELLED:
        return "Cancelled."
    if code in _RESETTING and resets_in_s:
        return f"{_reason(code)}. The limit resets in {duration_phrase(resets_in_s)}."
    advice = _HARD_ADVICE.get(code, "Retrying would not fix this.")
    return f"{_reason(code)}. {advice}"


def provider_wait_message(code: Code, *, wait_s: float, limit_s: float, limit_is_cap: bool) -> str:
    """The provider asked for a wait longer than automatic recovery may take."""
    limit = (
        f"the longest wait automatic retry takes ({duration_phrase(limit_s)})"
        if limit_is_cap
        else f"the time automatic retry has left ({duration_phrase(limit_s)})"
    )
    return (
        f"{_reason(code)}. The provider asked to wait {duration_phrase(wait_s)} before trying "
        f"again, longer than {limit}, so it was not retried automatically. Resume after that."
    )


def provider_refused_retry_message(code: Code) -> str:
    return (
        f"{_reason(code)}. The provider said this request should not be retried, so it was not "
        "retried automatically."
    )


def post_exposure_message(code: Code) -> str:
    return (
        f"{_reason(code)} after part of the answer was shown. The partial answer is kept and "
        "was not retried automatically; resume or start fresh to continue."
    )


def unclassified_message() -> str:
    return (
        "The provider returned an error that is not a known temporary failure, so it was not "
        "retried automatically."
    )


def _persisted(code: Code) -> str:
    return _PERSISTED.get(code, f"{_reason(code)} persisted")


# Why an automatic whole-prompt retry was refused (an agent's prompt is its retry unit).
REPLAY_REFUSED_BECAUSE: dict[ReplayReason, str] = {
    ReplayReason.TOOL_ACTIVITY: "The agent had already used a tool, so the prompt was not sent "
    "again automatically.",
    ReplayReason.OUTPUT_SEEN: "The agent had already started answering, so the prompt was not "
    "sent again automatically.",
    ReplayReason.DIAGNOSTIC_MISMATCH: "The agent reported a different problem before it failed, "
    "so the prompt was not sent again automatically.",
    ReplayReason.DIAGNOSTIC_TEXT_NOT_CONTAINED: "The agent reported a different problem before it "
    "failed, so the prompt was not sent again automatically.",
    ReplayReason.NOT_CURRENT: "The failure could not be tied to this prompt, so nothing was "
    "retried automatically.",
    ReplayReason.WORKSPACE_CHANGED: "The agent had already changed files in its workspace, so "
    "the prompt was not sent again automatically.",
    ReplayReason.EFFECTS_UNKNOWN: "What the agent did to its workspace could not be checked, so "
    "the prompt was not sent again automatically.",
}
NOT_TRANSIENT_BECAUSE = (
    "This failure is not known to be temporary, so nothing was retried automatically."
)


def replay_refused_because(reason: ReplayReason) -> str:
    return REPLAY_REFUSED_BECAUSE.get(reason, NOT_TRANSIENT_BECAUSE)


def replay_refused_message(code: Code, *, reason: ReplayReason) -> str:
    return f"{_reason(code)}. {replay_refused_because(reason)}"


# ---- how a turn ends when no provider failure is judged, and the cards around the ladder -------

WORKER_LOST = (
    "The worker running this prompt stopped before it finished. What arrived is kept and marked "
    "incomplete; resume or start fresh to continue."
)
RETRY_CANCELLED = "Automatic retry was cancelled. Resume or start fresh when ready."
UNEXPECTED = "Something went wrong on our side while running this prompt. It was not retried."
NO_PROMPT = "There is no prompt to send yet."
AGENT_SANDBOX_UNAVAILABLE = (
    "The agent was not started: it runs only inside its sandbox, and the sandbox could not be "
    "set up on this worker. Ask an operator to check the worker's log."
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
def target_not_allowed(target: str) -> str:
    return f"Target {target} can't be used as it is set up. {ASK_AN_OPERATOR}"


def target_key_missing(target: str) -> str:
    return f"Target {target} can't be called: its API key is not available. {ASK_AN_OPERATOR}"


def agent_not_installed(target: str) -> str:
    return (
        f"The agent of target {target} could not be started: it is not installed on this "
        f"worker. {ASK_AN_OPERATOR}"
    )


def target_key_unnamed(target: str) -> str:
    return f"Target {target} can't be called: no API key is configured for it. {ASK_AN_OPERATOR}"


def target_no_agent_kind(target: str) -> str:
    return f"Target {target} names no known agent kind; an operator must choose one."


# A card is a headline (what happened, what the person can do) and, after this marker, the
# redacted technical detail. No sentence in this module contains a newline, so the first marker
# is where the headline ends; the card shows the detail behind a disclosure.
DETAIL_MARKER = "\nDetails: "


def with_detail(message: str, detail: str) -> str:
    """A card's sentence followed by the (redacted) technical detail, when there is one."""
    return f"{message}{DETAIL_MARKER}{detail}" if detail else message


def split_detail(card: str) -> tuple[str, str]:
    """(headline, detail) of a card built by ``with_detail``; detail is "" when there is none."""
    headline, _, detail = card.partition(DETAIL_MARKER)
    return headline.strip(), detail.strip()


def recovery_actions(code: str) -> tuple[str, ...]:
    """What the card offers after a failure with this code, the primary action first."""
    try:
        repeats = Code(code) in RESUME_WOULD_REPEAT
    except ValueError:
        repeats = False
    return ("fresh",) if repeats else ("resume", "fresh")


def replay_refused_card(code: Code, *, reason: ReplayReason, partial: bool, detail: str) -> str:
    """The card for an agent's failed prompt that was not sent again automatically."""
    parts = [replay_refused_message(code, reason=reason)]
    if partial:
        parts.append("What the agent showed is kept and marked incomplete.")
    parts.append("Resume or start fresh when ready.")
    return with_detail(" ".join(parts), detail)


# ---- the composer and the transcript around a retry or a re-run --------------------------------

STILL_WORKING = "The agent is still working. Wait for it to finish or press Stop."
# A new prompt never silently drops a scheduled retry (it used to, and the banner restarted at
# attempt 1): the person cancels the retry first, with Stop or the banner's Cancel, which are the
# same action while a retry waits.
RETRY_PENDING = (
    "A retry of your last message is scheduled. Press Cancel (or Stop) to drop it, then send "
    "your new message; it is kept in the box."
)
NOTHING_TO_RERUN = "there is no prompt to re-run yet"
NEW_CONTEXT = "New context: the messages above are not sent to the agent."
SUPERSEDED_BY_RESUME = "Superseded: Resume ran this turn again below."
REPLACED_SUMMARY = {
    "regenerate": "Earlier answer, replaced by Regenerate",
    "edit": "Earlier version, replaced by your edit",
}


def replaced_summary(reason: str) -> str:
    """The closed disclosure an answer (or prompt) replaced by Regenerate or an edit sits behind,
    so the transcript never shows two answers to one question side by side."""
    return REPLACED_SUMMARY.get(reason, "Earlier version")


def recovered_line(code: str, *, retries: int) -> str:
    """The quiet line under an answer that arrived only after automatic retries."""
    noun = "retry" if retries == 1 else "retries"
    try:
        reason = _reason(Code(code)).lower()
    except ValueError:
        return f"Recovered after {retries} {noun}."
    return f"Recovered after {retries} {noun} ({reason})."


# ---- what a failed attempt did to its workspace (the failure card, Start fresh) ---------------


def files_counted(count: int) -> str:
    """Files counted the one way every workspace sentence counts them: "1 file", "3 files"."""
    return f"{count} file" if count == 1 else f"{count} files"


def effects_line(*, count: int, paths: tuple[str, ...] = ()) -> str:
    """The failure card's account of an attempt's effects; ``paths`` is already capped."""
    line = f"The agent changed {files_counted(count)} before the provider failed"
    if not paths:
        return line + "."
    more = f" and {count - len(paths)} more" if count > len(paths) else ""
    return f"{line}: {', '.join(paths)}{more}."


EFFECTS_UNKNOWN_LINE = (
    "What the agent changed before the provider failed could not be checked; review the "
    "workspace before you continue."
)
RESTORE_CONFIRM = (
    "Start fresh can put the workspace back exactly as it was when this turn started. "
    "These changes will be undone:"
)
RESUME_KEEPS = "Resume keeps these changes; Start fresh offers to undo them."
RESTORE_DONE = "The workspace was put back as it was when the turn started."
RESTORE_KEPT = "The agent's changes were kept."
