"""What a banner says while a target's shared health holds a turn (recovery/circuit.py): the
trouble is everyone's, or another session's Retry-After, so the wording says whose it is and never
blames the person's own prompt."""

from __future__ import annotations

from recovery.taxonomy import Code
from recovery.wording import duration_phrase

# When the circuit of a target is open, the trouble is not this person's: the banner says so, so
# nobody retries by hand or thinks their prompt is at fault.
_SHARED_TROUBLE = {
    Code.PROVIDER_OVERLOADED: "The provider is overloaded for everyone right now",
    Code.PROVIDER_UNAVAILABLE: "The provider is down for everyone right now",
    Code.MODEL_CAPACITY: "The model is at capacity for everyone right now",
    Code.RATE_LIMITED: "The provider is rate-limiting everyone on this target right now",
    Code.PROVIDER_RESOURCE_EXHAUSTED: "The provider is out of capacity for everyone right now",
    Code.NETWORK_UNAVAILABLE: "The provider can't be reached by anyone right now",
}
SHARED_TROUBLE_DEFAULT = "The provider is having trouble for everyone right now"
# The per-target retry budget held a retry back: many turns are retrying at once.
RETRIES_SPACED_OUT = "Many prompts to this provider are retrying; yours is spaced out to help it"


def shared_trouble_reason(code: str) -> str:
    """The banner's reason while a target's trouble is everyone's (circuit open, Retry-After)."""
    try:
        return _SHARED_TROUBLE.get(Code(code), SHARED_TROUBLE_DEFAULT)
    except ValueError:
        return SHARED_TROUBLE_DEFAULT


def deferred_message(reason: str, *, wait_s: float, attempt: int, max_attempts: int) -> str:
    """A turn that waits for the target's health before its next call. ``attempt`` 0: the turn
    has made no failing call of its own, so nothing is being retried and no attempt is counted."""
    if attempt == 0:
        return f"{reason}. Sending in {duration_phrase(wait_s)}."
    return f"{reason}. Retrying in {duration_phrase(wait_s)} (attempt {attempt} of {max_attempts})."


# A turn held by the target's shared health before it made any failing call of its own: the wait
# is someone else's news, and the banner says whose, so nobody thinks their prompt was at fault.
def _who_was_refused(*, ours: bool) -> str:
    return (
        "an earlier request of this session was refused"
        if ours
        else ("another session's request was refused")
    )


def shared_hold_reason(*, asked_s: float, ours: bool) -> str:
    """The banner's reason while a shared Retry-After holds a turn that has not failed itself."""
    return (
        f"Waiting: the provider asked everyone using this target to wait "
        f"{duration_phrase(asked_s)} ({_who_was_refused(ours=ours)})"
    )


def shared_trouble_wait_reason(code: str) -> str:
    """The banner's reason while the target's open circuit holds a turn that has not failed."""
    trouble = shared_trouble_reason(code)
    return f"Waiting: {trouble[0].lower()}{trouble[1:]} (other sessions' requests failed)"


def shared_hold_too_long_message(*, asked_s: float, cap_s: float, ours: bool) -> str:
    """The card of a turn handed back because a shared hold outlasts the longest automatic wait:
    the same cap, and the same outcome, as the turn whose own Retry-After it was."""
    return (
        f"Not sent: the provider asked everyone using this target to wait "
        f"{duration_phrase(asked_s)} ({_who_was_refused(ours=ours)}), longer than the longest "
        f"wait automatic retry takes ({duration_phrase(cap_s)}), so your message was not sent "
        "automatically. Resume when that wait is over."
    )
