"""The shared vocabulary of failures: what was seen (Evidence) and what it means (Classification).

Every layer speaks these types; the policy derives what to do from ``code`` and ``klass`` alone,
so there is exactly one place (``CODE_POLICY``) that says which codes are transient.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

EXCERPT_LIMIT_BYTES = 4 * 1024


class Source(enum.StrEnum):
    HTTP = "http"
    SSE = "sse"
    ACP_PROMPT = "acp_prompt"
    ACP_CHUNK = "acp_chunk"
    STDERR = "stderr"
    EXIT = "exit"


class Phase(enum.StrEnum):
    CONNECT = "connect"
    HEADERS = "headers"
    STREAM = "stream"
    PROTOCOL = "protocol"
    AUTH = "auth"
    TOOL = "tool"
    CANCELLATION = "cancellation"


class Kind(enum.StrEnum):
    TIMEOUT = "timeout"
    NETWORK = "network"
    RATE_LIMIT = "rate_limit"
    OVERLOAD = "overload"
    SERVER = "server"
    AUTH = "auth"
    PAYMENT = "payment"
    MALFORMED = "malformed"
    TRUNCATED = "truncated"
    INVALID_REQUEST = "invalid_request"
    CANCELLED = "cancelled"
    # Connection failures that name a set-up mistake rather than weather: the adapter tells them
    # from a plain NETWORK failure by the exception that caused them (see failures.py).
    CERTIFICATE = "certificate"  # the server's TLS certificate did not verify
    DNS = "dns"  # the base URL's host name does not resolve
    REFUSED = "refused"  # nothing listens at a non-local base URL's host and port
    UNKNOWN = "unknown"


class Exposure(enum.StrEnum):
    """How far the failed attempt got toward the viewer. Ordered: later members expose more."""

    NONE = "none"
    METADATA = "metadata"
    CONTENT = "content"
    TOOL_CALL = "tool_call"

    @property
    def is_user_visible(self) -> bool:
        return self in (Exposure.CONTENT, Exposure.TOOL_CALL)


class Code(enum.StrEnum):
    NETWORK_UNAVAILABLE = "network_unavailable"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    PROVIDER_OVERLOADED = "provider_overloaded"
    MODEL_CAPACITY = "model_capacity"
    RATE_LIMITED = "rate_limited"
    AGENT_TRANSPORT_LOST = "agent_transport_lost"
    PROVIDER_RESOURCE_EXHAUSTED = "provider_resource_exhausted"
    AUTH_REQUIRED = "auth_required"
    MISSING_CREDENTIALS = "missing_credentials"
    SUBSCRIPTION_REQUIRED = "subscription_required"
    QUOTA_LIMITED = "quota_limited"
    BILLING_LIMITED = "billing_limited"
    MODEL_UNAVAILABLE = "model_unavailable"
    PROVIDER_NOT_CONFIGURED = "provider_not_configured"
    INVALID_REQUEST = "invalid_request"
    REQUEST_TOO_LARGE = "request_too_large"
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    TLS_CERTIFICATE_FAILED = "tls_certificate_failed"
    HOST_NOT_FOUND = "host_not_found"
    CONNECTION_REFUSED = "connection_refused"
    MALFORMED_STREAM = "malformed_stream"
    TRUNCATED_STREAM = "truncated_stream"
    CANCELLED = "cancelled"
    UNCLASSIFIED = "unclassified"


class Klass(enum.StrEnum):
    TRANSIENT = "transient"
    HARD = "hard"
    UNCLASSIFIED = "unclassified"


class Confidence(enum.StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


@dataclass(frozen=True, slots=True)
class CodePolicy:
    klass: Klass
    fallback_eligible: bool
    reason: str  # the calm, human sentence a banner or card starts from


# The single policy table. Nothing else keeps its own list of "retryable" codes.
CODE_POLICY: dict[Code, CodePolicy] = {
    Code.NETWORK_UNAVAILABLE: CodePolicy(Klass.TRANSIENT, True, "Network unavailable"),
    Code.PROVIDER_UNAVAILABLE: CodePolicy(Klass.TRANSIENT, True, "Provider unavailable"),
    Code.PROVIDER_OVERLOADED: CodePolicy(Klass.TRANSIENT, True, "Provider overloaded"),
    Code.MODEL_CAPACITY: CodePolicy(Klass.TRANSIENT, True, "Model at capacity"),
    Code.RATE_LIMITED: CodePolicy(Klass.TRANSIENT, True, "Rate limited"),
    # Not fallback-eligible: the loss is the agent's own connection, not the provider's health, so
    # near the deadline it keeps the selected provider (requirements AC .15), and a chunk that
    # quotes it never becomes a diagnostic that could authorise a whole-prompt replay.
    Code.AGENT_TRANSPORT_LOST: CodePolicy(Klass.TRANSIENT, False, "Connection to the agent lost"),
    Code.PROVIDER_RESOURCE_EXHAUSTED: CodePolicy(
        Klass.TRANSIENT, True, "Provider resources exhausted"
    ),
    Code.TRUNCATED_STREAM: CodePolicy(Klass.TRANSIENT, True, "Response was cut short"),
    Code.AUTH_REQUIRED: CodePolicy(Klass.HARD, False, "Authentication required"),
    Code.MISSING_CREDENTIALS: CodePolicy(Klass.HARD, False, "Credentials missing"),
    Code.SUBSCRIPTION_REQUIRED: CodePolicy(Klass.HARD, False, "Subscription required"),
    # A plan's period quota (per day, per 5 hours): hard, since it resets on the provider's clock,
    # far beyond a retry ladder; the card says when, if the provider said.
    Code.QUOTA_LIMITED: CodePolicy(Klass.HARD, False, "Usage quota reached"),
    # Money: no credit, a spending cap, billing disabled. Nothing resets it but a person paying.
    Code.BILLING_LIMITED: CodePolicy(Klass.HARD, False, "Billing limit reached"),
    Code.MODEL_UNAVAILABLE: CodePolicy(Klass.HARD, True, "Model unavailable"),
    Code.PROVIDER_NOT_CONFIGURED: CodePolicy(Klass.HARD, False, "Provider not configured"),
    Code.INVALID_REQUEST: CodePolicy(Klass.HARD, False, "Request rejected"),
    # Bigger than the target accepts in one request (bytes, or tokens per minute at its tier):
    # the same request can never succeed there, however long we wait.
    Code.REQUEST_TOO_LARGE: CodePolicy(Klass.HARD, False, "Request too large for this target"),
    Code.CONTEXT_LENGTH_EXCEEDED: CodePolicy(
        Klass.HARD, False, "The conversation is too long for the model"
    ),
    # Set-up mistakes in a target (a wrong base URL, a host without a trusted certificate): no
    # wait fixes them, and the card names which one it is.
    Code.TLS_CERTIFICATE_FAILED: CodePolicy(
        Klass.HARD, False, "The provider's TLS certificate could not be verified"
    ),
    Code.HOST_NOT_FOUND: CodePolicy(Klass.HARD, False, "The provider's host name does not resolve"),
    Code.CONNECTION_REFUSED: CodePolicy(Klass.HARD, False, "The provider refused the connection"),
    Code.MALFORMED_STREAM: CodePolicy(Klass.HARD, False, "Provider sent a malformed response"),
    Code.CANCELLED: CodePolicy(Klass.HARD, False, "Cancelled"),
    Code.UNCLASSIFIED: CodePolicy(Klass.UNCLASSIFIED, False, "Unexpected provider error"),
}


@dataclass(frozen=True, slots=True)
class Evidence:
    """What an adapter saw of one failure. Decoding only; no judgement here."""

    source: Source
    excerpt: str = ""  # redacted (diagnostic tier) and bounded to EXCERPT_LIMIT_BYTES
    phase: Phase | None = None
    kind: Kind = Kind.UNKNOWN  # seen by the adapter itself; UNKNOWN for an error the provider sent
    status: int | None = None
    retry_after_ms: int | None = None
    provider_code: str | None = None  # e.g. "overloaded_error", "insufficient_quota", "-32603"
    exposure: Exposure = Exposure.NONE
    terminal_seen: bool = False
    provider_id: str | None = None  # "anthropic", "openai", "acp", ... None: provider-neutral
    model_id: str | None = None
    generation: int | None = None
    reset_at_ms: int | None = None  # absolute reset hint (epoch ms) from rate-limit headers
    should_retry: bool | None = None  # the provider's x-should-retry header; None when absent


def http_status_of(value: object) -> int | None:
    """An HTTP status written in a provider's error body (a number, or a string of digits), or
    None for anything else. Gateways put one in ``error.code``, where it must not pass for an
    error code of the provider's own."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 100 <= value <= 599:
        return value
    if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
        return int(value)
    return None


@dataclass(frozen=True, slots=True)
class Classification:
    code: Code
    klass: Klass
    confidence: Confidence
    rule_id: str | None
    catalogue_version: str
    reset_hint_ms: int | None = None  # relative: how long after the failure the provider resets
    fallback_eligible: bool = False
    reset_at_ms: int | None = None  # absolute (epoch ms) reset from rate-limit headers, if any

    @property
    def reason(self) -> str:
        return CODE_POLICY[self.code].reason

    @property
    def is_transient(self) -> bool:
        return self.klass is Klass.TRANSIENT


class ProviderFailure(Exception):
    """Raised by adapters and the guard: the call failed, and this is the evidence."""

    def __init__(self, evidence: Evidence, detail: str = "") -> None:
        super().__init__(evidence, detail)
        self.evidence = evidence
        self.detail = detail

    def __str__(self) -> str:  # never includes secrets: the excerpt is already redacted
        return f"{self.evidence.kind}: {self.detail or self.evidence.excerpt[:200]}"
