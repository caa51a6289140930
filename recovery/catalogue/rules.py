"""The catalogue: one ordered registry of rules. The first rule that matches decides.

Order is priority. Structured metadata (status, provider error type, adapter-observed kind)
comes first, exact signatures anchored at the start of a line next, broad patterns last; a test
keeps the registry sorted by tier. Adding a known provider message means adding a rule here and
fixtures in ``fixtures/``; nothing else branches on provider text.
"""

from __future__ import annotations

import re

from recovery.catalogue.model import Rule, Tier
from recovery.catalogue.signatures import (
    is_cursor_auth_frame,
    is_cursor_exhausted_frame,
    is_cursor_quota_frame,
    is_cursor_transport_frame,
)
from recovery.taxonomy import Code, Confidence, Kind, Phase, Source

S, E, B = Tier.STRUCTURED, Tier.EXACT, Tier.BROAD
# An HTTP error response or an error event in a provider's stream: the only places where a bare
# word such as "requests" or "overloaded" is a provider's error type rather than anyone's prose.
_ERROR_BODY = frozenset({Source.HTTP, Source.SSE})
# Everything but an agent's answer chunk: where a provider's sentence (not its error type) is
# the failure speaking. A chunk is the agent talking, and agents quote errors in their answers.
_NOT_A_CHUNK = frozenset({Source.HTTP, Source.SSE, Source.ACP_PROMPT, Source.STDERR, Source.EXIT})
# An agent's own log: where a Python SDK's exception line is the agent's failure.
_AGENT_LOG = frozenset({Source.STDERR, Source.EXIT})
# The openings of the providers' context-window refusals (Anthropic, OpenAI and its compatibles,
# OpenRouter, Gemini, Bedrock), matched at the start of the error message.
_CONTEXT_LENGTH = (
    r"(?:prompt is too long: \d+ tokens > \d+ maximum"
    r"|input length and `max_tokens` exceed context limit"
    r"|This (?:model's|endpoint's) maximum context length is \d+ tokens"
    r"|The input token count \(\d+\) exceeds the maximum number of tokens allowed"
    r"|Input is too long for requested model)"
)
# A limit counted per day: a quota that resets on the provider's clock, not a burst to wait out.
_PER_DAY = r".*\bper[ -]day\b"
_RATE_LIMIT_CODES = frozenset(
    {
        "rate_limit_exceeded",
        "rate_limit_error",
        "throttlingexception",
        "throttling_error",
        "resource_exhausted",
        "requests",
        "tokens",
    }
)

# Claude agents print provider failures as "API Error: ..." and ACP wraps them in the JSON-RPC
# "Internal error: " prefix; nothing else may precede the signature on its line.
_CLAUDE = r"(?:Internal error: )?API Error: "
_TRANSPORT_LOST = r"(?:(?:Internal error|Error): )?peer disconnected before response\b"


def _line(pattern: str, *, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


RULES: tuple[Rule, ...] = (
    # ---- structured: what the adapter observed about the transport ------------------------
    Rule(
        id="evidence.cancelled.v1",
        code=Code.CANCELLED,
        tier=S,
        kinds=frozenset({Kind.CANCELLED}),
        why_narrow="Only the adapter's own record that we cancelled; never inferred from text.",
    ),
    Rule(
        id="evidence.cancellation_phase.v1",
        code=Code.CANCELLED,
        tier=S,
        phases=frozenset({Phase.CANCELLATION}),
        why_narrow="A failure raised while cancelling is the cancellation, whatever it says.",
    ),
    Rule(
        id="acp.request_cancelled.32800.v1",
        code=Code.CANCELLED,
        tier=S,
        provider_codes=frozenset({"-32800"}),
        why_narrow="ACP reserves JSON-RPC -32800 for a cancelled request and nothing else.",
    ),
    # ---- structured: connection failures that name a set-up mistake --------------------------
    Rule(
        id="evidence.tls_certificate.v1",
        code=Code.TLS_CERTIFICATE_FAILED,
        tier=S,
        kinds=frozenset({Kind.CERTIFICATE}),
        why_narrow=(
            "The adapter saw certificate verification fail: the target's set-up, not weather."
        ),
    ),
    Rule(
        id="evidence.host_not_found.v1",
        code=Code.HOST_NOT_FOUND,
        tier=S,
        kinds=frozenset({Kind.DNS}),
        why_narrow="The adapter saw the base URL's host name fail to resolve (no such name).",
    ),
    Rule(
        id="evidence.connection_refused.v1",
        code=Code.CONNECTION_REFUSED,
        tier=S,
        kinds=frozenset({Kind.REFUSED}),
        why_narrow=(
            "A refusal at a non-local base URL; the adapter keeps a refused loopback (a local "
            "proxy still starting) as a plain network failure."
        ),
    ),
    # ---- structured: money, named by the body whatever status carries it ---------------------
    Rule(
        id="anthropic.credit_balance_too_low.v2",
        code=Code.BILLING_LIMITED,
        tier=S,
        provider_codes=frozenset({"invalid_request_error", "billing_error"}),
        line=_line(r"Your credit balance is too low\b"),
        why_narrow=(
            "Anthropic reports an empty balance as a 400 invalid_request_error; only that error "
            "type with this exact opening sentence is money, not a malformed request."
        ),
    ),
    Rule(
        id="anthropic.usage_limits_reached.v1",
        code=Code.BILLING_LIMITED,
        tier=S,
        provider_codes=frozenset({"invalid_request_error"}),
        line=_line(r"You have reached your specified API usage limits\b"),
        why_narrow=(
            "Anthropic's spend-limit refusal, also an invalid_request_error; the exact opening "
            "sentence of the message and nothing looser."
        ),
    ),
    Rule(
        id="proxy.credentials_refused.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        provider_codes=frozenset({"proxy_error"}),
        line=_line(r"All account credentials were refused by the upstream provider\b"),
        why_narrow=(
            "A subscription proxy's proxy_error with this exact sentence: every account was "
            "refused, whatever gateway status carries it, so it must beat a 5xx status."
        ),
    ),
    Rule(
        id="openai.insufficient_quota.v2",
        code=Code.BILLING_LIMITED,
        tier=S,
        provider_codes=frozenset({"insufficient_quota"}),
        why_narrow=(
            "OpenAI's code for an account without credit (its message says 'check your plan and "
            "billing details'); it arrives as a 429 and must beat it."
        ),
    ),
    Rule(
        id="openai.billing_hard_limit_reached.v2",
        code=Code.BILLING_LIMITED,
        tier=S,
        provider_codes=frozenset({"billing_hard_limit_reached"}),
        why_narrow=(
            "OpenAI's code for a reached spending cap; it arrives as a 400 invalid_request_error "
            "and must beat that type."
        ),
    ),
    Rule(
        id="anthropic.billing_error.v2",
        code=Code.BILLING_LIMITED,
        tier=S,
        provider_codes=frozenset({"billing_error"}),
        why_narrow="Anthropic's billing error type, whatever status carries it (402 or 429).",
    ),
    Rule(
        id="http.payment_required.402.v2",
        code=Code.BILLING_LIMITED,
        tier=S,
        statuses=frozenset({402}),
        why_narrow=(
            "402 means money (DeepSeek's and OpenRouter's empty balance), which waiting does not "
            "bring; it beats the invalid_request_error code DeepSeek sends with it."
        ),
    ),
    Rule(
        id="google.billing_disabled.v1",
        code=Code.BILLING_LIMITED,
        tier=S,
        provider_codes=frozenset({"billing_disabled"}),
        why_narrow="Google's ErrorInfo reason for a project without billing, inside a 403.",
    ),
    Rule(
        id="google.api_key_invalid.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        provider_codes=frozenset({"api_key_invalid"}),
        why_narrow=(
            "Google sends a bad key as 400 INVALID_ARGUMENT; only the ErrorInfo reason "
            "API_KEY_INVALID says it is the key, so it must beat the 400."
        ),
    ),
    # ---- structured: requests that can never succeed as sent -----------------------------------
    Rule(
        id="http.request_too_large.413.v2",
        code=Code.REQUEST_TOO_LARGE,
        tier=S,
        statuses=frozenset({413}),
        why_narrow=(
            "413 is the request's size (bytes, or Groq's tokens-per-minute cap at the account's "
            "tier), the same on every attempt; it beats the rate-limit code Groq sends with it."
        ),
    ),
    Rule(
        id="anthropic.request_too_large.v2",
        code=Code.REQUEST_TOO_LARGE,
        tier=S,
        provider_codes=frozenset({"request_too_large"}),
        why_narrow="Anthropic's type for a request over its byte limit, whatever carries it.",
    ),
    Rule(
        id="groq.request_too_large.tpm.v1",
        code=Code.REQUEST_TOO_LARGE,
        tier=S,
        provider_codes=frozenset({"rate_limit_exceeded", "tokens"}),
        line=_line(r"Request too large for model\b"),
        why_narrow=(
            "Groq's refusal of one request bigger than the per-minute token cap, when no 413 "
            "came with it (a stream error): its rate-limit code would otherwise retry it."
        ),
    ),
    Rule(
        id="openai.context_length_exceeded.v1",
        code=Code.CONTEXT_LENGTH_EXCEEDED,
        tier=S,
        provider_codes=frozenset({"context_length_exceeded", "codex.context_window_exceeded"}),
        why_narrow="The providers' (and Codex's) own code for a conversation over the window.",
    ),
    Rule(
        id="context_length.message.v1",
        code=Code.CONTEXT_LENGTH_EXCEEDED,
        tier=S,
        provider_codes=frozenset(
            {"invalid_request_error", "invalid_argument", "validationexception"}
        ),
        line=_line(_CONTEXT_LENGTH),
        why_narrow=(
            "An invalid-request type whose message opens with a provider's own context-window "
            "sentence; the same type with any other message stays a rejected request."
        ),
    ),
    Rule(
        id="context_length.message.400.v1",
        code=Code.CONTEXT_LENGTH_EXCEEDED,
        tier=S,
        statuses=frozenset({400}),
        line=_line(_CONTEXT_LENGTH),
        why_narrow=(
            "A 400 with no error type (OpenRouter) whose message opens with a context-window "
            "sentence; anchored, so a 400 quoting one mid-message stays a rejected request."
        ),
    ),
    # ---- structured: a quota counted per day is not a burst to wait out ------------------------
    Rule(
        id="rate_limit.per_day.429.v1",
        code=Code.QUOTA_LIMITED,
        tier=S,
        statuses=frozenset({429}),
        line=_line(_PER_DAY),
        why_narrow=(
            "A 429 whose message names a per-day limit (OpenAI and Groq RPD/TPD, OpenRouter's "
            "free-models-per-day, Bedrock's tokens per day): it resets tomorrow, not in seconds."
        ),
    ),
    Rule(
        id="rate_limit.per_day.codes.v1",
        code=Code.QUOTA_LIMITED,
        tier=S,
        provider_codes=_RATE_LIMIT_CODES,
        line=_line(_PER_DAY),
        why_narrow="The same per-day limit named by a rate-limit type when no 429 came with it.",
    ),
    Rule(
        id="google.quota.per_day.v1",
        code=Code.QUOTA_LIMITED,
        tier=S,
        provider_codes=frozenset({"google.quota.per_day"}),
        why_narrow="A QuotaFailure whose violated quota id counts per day (…PerDay…).",
    ),
    Rule(
        id="google.quota.per_minute.v1",
        code=Code.RATE_LIMITED,
        tier=S,
        provider_codes=frozenset({"google.quota.per_minute"}),
        why_narrow=(
            "A QuotaFailure whose violated quota counts per minute: Google's 'You exceeded your "
            "current quota' sentence then means a short limit, so it must beat that sentence."
        ),
    ),
    # ---- structured: a model that is gone, not a path that is wrong ----------------------------
    Rule(
        id="anthropic.not_found_error.model.v1",
        code=Code.MODEL_UNAVAILABLE,
        tier=S,
        provider_codes=frozenset({"not_found_error"}),
        line=_line(r"model: \S+$"),
        why_narrow=(
            "Anthropic's not_found_error whose whole message is 'model: <id>' (a withdrawn or "
            "unknown model); any other not_found_error is a wrong path."
        ),
    ),
    Rule(
        id="google.model_not_found.v1",
        code=Code.MODEL_UNAVAILABLE,
        tier=S,
        provider_codes=frozenset({"not_found"}),
        line=_line(r"models/\S+ is not found for API version\b"),
        why_narrow="Google's NOT_FOUND whose message names a models/ resource, nothing looser.",
    ),
    Rule(
        id="openrouter.no_endpoints.v1",
        code=Code.MODEL_UNAVAILABLE,
        tier=S,
        statuses=frozenset({404}),
        line=_line(r"No endpoints found for \S+"),
        why_narrow="OpenRouter's 404 for a model no provider serves any more; the exact opening.",
    ),
    Rule(
        id="openai.server_overloaded.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=S,
        provider_codes=frozenset({"server_error"}),
        line=_line(r"The server is overloaded or not ready yet\."),
        why_narrow="OpenAI's own overload sentence opening a server_error's message.",
    ),
    Rule(
        id="anthropic.overloaded_error.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=S,
        provider_codes=frozenset({"overloaded_error"}),
        why_narrow=(
            "The body's error type, so an overload smuggled into an HTTP 200 stream is seen "
            "even though the status says success."
        ),
    ),
    Rule(
        id="anthropic.rate_limit_error.v1",
        code=Code.RATE_LIMITED,
        tier=S,
        provider_codes=frozenset({"rate_limit_error", "rate_limit_exceeded"}),
        why_narrow="Anthropic's and OpenAI's rate-limit error types, in a 429 or in a stream.",
    ),
    Rule(
        id="anthropic.api_error.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=S,
        provider_codes=frozenset({"api_error", "server_error"}),
        why_narrow=(
            "The providers' internal-error types (Anthropic api_error, OpenAI server_error)."
        ),
    ),
    Rule(
        id="anthropic.authentication_error.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        provider_codes=frozenset({"authentication_error", "invalid_api_key"}),
        why_narrow="The providers' own words for a refused key; a key never fixes itself.",
    ),
    Rule(
        id="anthropic.permission_error.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        provider_codes=frozenset({"permission_error"}),
        why_narrow="The key works but may not use this resource: the user must change access.",
    ),
    Rule(
        id="openai.model_not_found.v1",
        code=Code.MODEL_UNAVAILABLE,
        tier=S,
        provider_codes=frozenset({"model_not_found"}),
        why_narrow="OpenAI names an unknown or withdrawn model with this code; another may work.",
    ),
    Rule(
        id="anthropic.invalid_request_error.v1",
        code=Code.INVALID_REQUEST,
        tier=S,
        provider_codes=frozenset({"invalid_request_error"}),
        why_narrow="A rejected request stays rejected; placed after the credit-balance rule.",
    ),
    Rule(
        id="acp.auth_required.32000.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        provider_codes=frozenset({"-32000"}),
        why_narrow="ACP reserves JSON-RPC -32000 for 'authentication required'.",
    ),
    # ---- structured: real agents' own structured error kinds (recovery/providers/acp/
    # structured.py projects them through an allowlist; the raw JSON-RPC data never gets here)
    Rule(
        id="codex.error_info.server_overloaded.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=S,
        provider_codes=frozenset({"codex.server_overloaded"}),
        why_narrow="Codex's codex_error_info kind for a provider overload, nothing textual.",
    ),
    Rule(
        id="codex.error_info.internal_server_error.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=S,
        provider_codes=frozenset({"codex.internal_server_error"}),
        why_narrow="Codex's codex_error_info kind for a provider 5xx it names no status for.",
    ),
    Rule(
        id="codex.error_info.unauthorized.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        provider_codes=frozenset({"codex.unauthorized"}),
        why_narrow="Codex's kind for a refused key; waiting never fixes a key.",
    ),
    Rule(
        id="codex.error_info.usage_limit_exceeded.v1",
        code=Code.QUOTA_LIMITED,
        tier=S,
        provider_codes=frozenset({"codex.usage_limit_exceeded"}),
        why_narrow="Codex's kind for a spent plan or credit, not a per-minute limit.",
    ),
    Rule(
        id="codex.error_info.rejected_request.v2",
        code=Code.INVALID_REQUEST,
        tier=S,
        provider_codes=frozenset({"codex.bad_request"}),
        why_narrow=(
            "Codex's kind for a request refused the same way every time; its context-window "
            "kind has a code of its own above."
        ),
    ),
    Rule(
        id="google.unauthenticated.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        provider_codes=frozenset({"unauthenticated", "permission_denied"}),
        why_narrow="Google's statuses for a caller it does not accept (401 and 403 bodies).",
    ),
    Rule(
        id="bedrock.throttling.v1",
        code=Code.RATE_LIMITED,
        tier=S,
        provider_codes=frozenset({"throttlingexception"}),
        why_narrow=(
            "Bedrock's exception type (x-amzn-ErrorType, or botocore's line in an agent's log) "
            "for a short rate limit, after the per-day rules had their say."
        ),
    ),
    Rule(
        id="bedrock.service_unavailable.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=S,
        provider_codes=frozenset(
            {"serviceunavailableexception", "modelnotreadyexception", "internalserverexception"}
        ),
        why_narrow="Bedrock's exception types for a service or model that is not serving now.",
    ),
    Rule(
        id="bedrock.access_denied.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        provider_codes=frozenset({"accessdeniedexception", "unrecognizedclientexception"}),
        why_narrow="Bedrock's exception types for a caller or key it does not accept.",
    ),
    Rule(
        id="bedrock.validation.v1",
        code=Code.INVALID_REQUEST,
        tier=S,
        provider_codes=frozenset({"validationexception"}),
        why_narrow="Bedrock's type for a rejected request, after the context-window sentence.",
    ),
    Rule(
        id="google.quota_exceeded.v1",
        code=Code.QUOTA_LIMITED,
        tier=S,
        statuses=frozenset({429}),
        line=_line(r"You exceeded your current quota\b"),
        why_narrow=(
            "Google answers a spent quota and a per-minute limit with the same 429 "
            "RESOURCE_EXHAUSTED; only this opening sentence is the quota, and it must beat the 429."
        ),
    ),
    Rule(
        id="google.resource_exhausted.v1",
        code=Code.RATE_LIMITED,
        tier=S,
        provider_codes=frozenset({"resource_exhausted"}),
        why_narrow="Google's status for a rate limit once the quota sentence had its say.",
    ),
    Rule(
        id="google.model_overloaded.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=S,
        statuses=frozenset({503, 529}),
        line=_line(r"The model is overloaded\. Please try again later\."),
        why_narrow=(
            "Google's (and Gemini CLI's) overload sentence opening the message of a 503 or 529; "
            "any other 503 is just unavailable."
        ),
    ),
    Rule(
        id="google.unavailable.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=S,
        provider_codes=frozenset({"unavailable", "internal", "deadline_exceeded"}),
        why_narrow="Google's statuses for a server that failed or timed out (503, 500, 504).",
    ),
    # ---- structured: HTTP status alone, after the body's error type had its say ------------
    Rule(
        id="anthropic.overloaded.529.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=S,
        statuses=frozenset({529}),
        why_narrow="529 is Anthropic's overload status; no other meaning is in use.",
    ),
    Rule(
        id="http.too_many_requests.429.v1",
        code=Code.RATE_LIMITED,
        tier=S,
        statuses=frozenset({429}),
        why_narrow="A 429 whose body named no quota or billing type is a rate limit.",
    ),
    Rule(
        id="http.unauthorized.401.v1",
        code=Code.AUTH_REQUIRED,
        tier=S,
        statuses=frozenset({401, 403}),
        why_narrow="401 and 403 refuse the caller, not the request's timing.",
    ),
    Rule(
        id="http.bad_request.400.v1",
        code=Code.INVALID_REQUEST,
        tier=S,
        statuses=frozenset({400, 422}),
        why_narrow="400 and 422 reject the request itself.",
    ),
    Rule(
        id="http.not_found.404.v1",
        code=Code.PROVIDER_NOT_CONFIGURED,
        tier=S,
        statuses=frozenset({404}),
        why_narrow="A 404 without a model_not_found code is a wrong base URL or path.",
    ),
    Rule(
        id="http.not_implemented.501.v1",
        code=Code.PROVIDER_NOT_CONFIGURED,
        tier=S,
        statuses=frozenset({501, 505}),
        why_narrow=(
            "501 (no such method or endpoint) and 505 (an HTTP version it will not speak) are the "
            "server's permanent answer to how the target is set up."
        ),
    ),
    Rule(
        id="http.server_error.5xx.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=S,
        statuses=frozenset({408, 500, 502, 503, 504, 520, 521, 522, 523, 524}),
        why_narrow=(
            "Server-side and gateway failures only; 501 and 505 are permanent and have a rule "
            "of their own."
        ),
    ),
    # Codex kinds that may carry an HTTP status: after the status rules, so a status decides.
    Rule(
        id="codex.error_info.connection_failed.v1",
        code=Code.NETWORK_UNAVAILABLE,
        tier=S,
        provider_codes=frozenset(
            {"codex.http_connection_failed", "codex.response_stream_connection_failed"}
        ),
        why_narrow="Codex's kinds for a request that never reached the provider.",
    ),
    Rule(
        id="codex.error_info.stream_disconnected.v1",
        code=Code.TRUNCATED_STREAM,
        tier=S,
        provider_codes=frozenset(
            {"codex.response_stream_disconnected", "codex.stream_disconnected"}
        ),
        why_narrow=(
            "Codex's kind for a response stream that ended before response.completed, or its "
            "'other' kind whose message opens with Codex's own 'stream disconnected before "
            "completion:' prefix; a status, when present, was judged first."
        ),
    ),
    Rule(
        id="evidence.truncated.v1",
        code=Code.TRUNCATED_STREAM,
        tier=S,
        kinds=frozenset({Kind.TRUNCATED}),
        why_narrow="The adapter saw the stream end without its terminal event.",
    ),
    Rule(
        id="evidence.malformed.v1",
        code=Code.MALFORMED_STREAM,
        tier=S,
        kinds=frozenset({Kind.MALFORMED}),
        why_narrow="The adapter could not parse the provider's bytes; resending gets the same.",
    ),
    Rule(
        id="evidence.network.v1",
        code=Code.NETWORK_UNAVAILABLE,
        tier=S,
        kinds=frozenset({Kind.NETWORK}),
        why_narrow="A socket-level failure the adapter observed (refused, reset, DNS).",
    ),
    Rule(
        id="evidence.timeout.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=S,
        kinds=frozenset({Kind.TIMEOUT}),
        why_narrow="The provider accepted the connection but sent nothing in time.",
    ),
    # ---- exact signatures, anchored at the start of one line -------------------------------
    Rule(
        id="acp.claude.api_error_529.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=E,
        line=_line(
            _CLAUDE
            + r"529 (?:Overloaded\b|\{\"type\":\"error\",\"error\":\{\"type\":\"overloaded_error\")"
        ),
        needles=("api error:",),
        why_narrow="Claude agents' own overload line; prose that quotes it mid-sentence is not it.",
    ),
    Rule(
        id="acp.claude.repeated_529.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=E,
        line=_line(_CLAUDE + r"Repeated 529 Overloaded errors\b"),
        needles=("api error:",),
        why_narrow="The line a Claude agent prints after its own retries; exact wording only.",
    ),
    Rule(
        id="acp.claude.api_error_429.v1",
        code=Code.RATE_LIMITED,
        tier=E,
        line=_line(_CLAUDE + r"429 \{\"type\":\"error\",\"error\":\{\"type\":\"rate_limit_error\""),
        needles=("api error:",),
        why_narrow="A Claude agent echoing the provider's 429 body; the error type is required.",
    ),
    Rule(
        id="acp.claude.api_error_5xx.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=E,
        line=_line(
            _CLAUDE
            + r"(?:500 Internal server error|502 Bad Gateway|503 Service Unavailable"
            + r"|504 Gateway Timeout|500 \{\"type\":\"error\",\"error\":\{\"type\":\"api_error\")"
        ),
        needles=("api error:",),
        why_narrow="Gateway and server failures as a Claude agent reports them; exact reasons.",
    ),
    Rule(
        id="codex.model_at_capacity.v1",
        code=Code.MODEL_CAPACITY,
        tier=E,
        line=_line(r"(?:Error: )?Selected model is at capacity\. Please try a different model\b"),
        needles=("selected model is at capacity",),
        why_narrow="The Codex agent's full two-sentence notice; 'at capacity' alone is prose.",
    ),
    Rule(
        id="acp.quota_period_reset.v1",
        code=Code.QUOTA_LIMITED,
        tier=E,
        line=_line(r"(?:Error: )?You have reached your current quota for this period\b"),
        needles=("current quota for this period",),
        why_narrow="The agent's period-quota notice; its reset delay is read separately.",
    ),
    Rule(
        id="proxy.credentials_refused.text.v1",
        code=Code.AUTH_REQUIRED,
        tier=E,
        line=_line(r"All account credentials were refused by the upstream provider\b"),
        needles=("credentials were refused",),
        why_narrow="The same refusal relayed as text by an agent; anchored at the line start.",
    ),
    Rule(
        id="acp.transport_lost.overloaded.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=E,
        line=_line(_TRANSPORT_LOST + r".*(?:\b529 Overloaded\b|overloaded_error)"),
        needles=("peer disconnected before response",),
        veto_cancellation=True,
        why_narrow="When one line shows both, the overload is the cause and the drop its effect.",
    ),
    Rule(
        id="acp.transport_lost.v1",
        code=Code.AGENT_TRANSPORT_LOST,
        tier=E,
        line=_line(_TRANSPORT_LOST),
        needles=("peer disconnected before response",),
        veto_cancellation=True,
        why_narrow=(
            "The SDK's disconnect signature opening a line; cancellation words veto it, and a "
            "JSON-RPC error carrying it only in data never reaches the line matcher."
        ),
    ),
    Rule(
        id="cursor.retriable_error.v2",
        code=Code.AGENT_TRANSPORT_LOST,
        tier=E,
        line_check=is_cursor_transport_frame,
        needles=("retriableerror:",),
        veto_cancellation=True,
        why_narrow=(
            "Any non-empty suffix of at most 256 UTF-8 bytes after the trimmed, case-insensitive "
            "prefix (requirements AC .12 and .14; '[canceled]' included), except the three "
            "suffixes the rules below name, and the cancellation words veto. Disjoint from those "
            "rules, so it goes first: the common frame costs one check."
        ),
    ),
    Rule(
        id="cursor.retriable_error.quota.v1",
        code=Code.QUOTA_LIMITED,
        tier=E,
        line_check=is_cursor_quota_frame,
        needles=("retriableerror:",),
        why_narrow=(
            "Cursor reuses its RetriableError prefix for a spent quota ('[resource_exhausted] "
            "quota exceeded'); retrying that would only be refused again."
        ),
    ),
    Rule(
        id="cursor.retriable_error.auth.v1",
        code=Code.AUTH_REQUIRED,
        tier=E,
        line_check=is_cursor_auth_frame,
        needles=("retriableerror:",),
        why_narrow=(
            "Cursor's RetriableError prefix over a refused credential ('authentication "
            "required', 'invalid API key'): a key never fixes itself."
        ),
    ),
    Rule(
        id="cursor.retriable_error.resource_exhausted.v1",
        code=Code.PROVIDER_RESOURCE_EXHAUSTED,
        tier=E,
        line_check=is_cursor_exhausted_frame,
        needles=("retriableerror:",),
        veto_cancellation=True,
        why_narrow="Only the bare '[resource_exhausted] Error'; quota or key suffixes are hard.",
    ),
    Rule(
        id="acp.claude.unable_to_connect.v1",
        code=Code.NETWORK_UNAVAILABLE,
        tier=E,
        line=_line(_CLAUDE + r"Unable to connect to API \((?:UND_ERR_SOCKET|ECONNREFUSED)\)$"),
        needles=("api error:",),
        why_narrow=(
            "Claude Code's line for a connection that failed or dropped, with the undici or "
            "socket code it names; only codes seen from it, the whole line."
        ),
    ),
    Rule(
        id="acp.claude.unable_to_connect.host_not_found.v1",
        code=Code.HOST_NOT_FOUND,
        tier=E,
        line=_line(_CLAUDE + r"Unable to connect to API \(ENOTFOUND\)$"),
        needles=("api error:",),
        why_narrow=(
            "Claude Code's connection line with Node's code for a name that does not exist; "
            "EAI_AGAIN (a resolver that did not answer) is not it."
        ),
    ),
    Rule(
        id="acp.claude.unable_to_connect.certificate.v1",
        code=Code.TLS_CERTIFICATE_FAILED,
        tier=E,
        line=_line(
            _CLAUDE
            + r"Unable to connect to API \((?:DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN"
            + r"|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY"
            + r"|CERT_HAS_EXPIRED|ERR_TLS_CERT_ALTNAME_INVALID)\)$"
        ),
        needles=("api error:",),
        why_narrow="Claude Code's connection line with one of Node's certificate-failure codes.",
    ),
    Rule(
        id="acp.claude.stream_ended.v1",
        code=Code.TRUNCATED_STREAM,
        tier=E,
        line=_line(_CLAUDE + r"Stream ended without receiving any events$"),
        needles=("api error:",),
        why_narrow="Claude Code's line for a stream cut before message_stop; the whole line.",
    ),
    Rule(
        id="acp.stream_terminated.v1",
        code=Code.TRUNCATED_STREAM,
        tier=E,
        line=_line(r"(?:(?:Internal error: )?API Error: )?terminated$"),
        needles=("terminated",),
        why_narrow=(
            "Node's fetch says only 'terminated' when a response body is cut; Gemini CLI sends "
            "that word alone, Claude Code after its prefix. The word must be the whole line."
        ),
    ),
    Rule(
        id="acp.claude.api_error_body.overloaded.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=E,
        line=_line(_CLAUDE + r"\{\"type\":\"error\",\"error\":\{\"type\":\"overloaded_error\""),
        needles=("api error:",),
        why_narrow=(
            "Claude Code relaying an in-stream overload event (no status before the body); the "
            "error type must follow the prefix directly."
        ),
    ),
    Rule(
        id="acp.claude.api_error_body.api_error.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=E,
        line=_line(_CLAUDE + r"\{\"type\":\"error\",\"error\":\{\"type\":\"api_error\""),
        needles=("api error:",),
        why_narrow=(
            "Claude Code relaying an in-stream server error event (no status before the body); "
            "the error type must follow the prefix directly."
        ),
    ),
    Rule(
        id="acp.claude.api_error_body.rate_limit.v1",
        code=Code.RATE_LIMITED,
        tier=E,
        line=_line(_CLAUDE + r"\{\"type\":\"error\",\"error\":\{\"type\":\"rate_limit_error\""),
        needles=("api error:",),
        why_narrow=(
            "Claude Code relaying an in-stream rate-limit event (no status before the body); the "
            "error type must follow the prefix directly."
        ),
    ),
    # ---- exact: usage-limit and account notices agents print in their own words --------------
    Rule(
        id="claude_code.usage_limit.v1",
        code=Code.QUOTA_LIMITED,
        tier=E,
        line=_line(
            r"(?:Internal error: |Error: )?"
            r"(?:Claude AI usage limit reached\|\d{10,13}$"
            r"|Claude usage limit reached\. Your limit will reset at "
            r"|(?:5-hour|weekly|Opus weekly) limit reached [∙·] resets "
            r"|You've hit your limit [∙·] resets )"
        ),
        needles=("limit reached", "you've hit your"),
        why_narrow=(
            "Claude Code's subscription-limit notices, each in its exact shape (the epoch after "
            "'|', the reset clause); the topic words alone are prose."
        ),
    ),
    Rule(
        id="codex.usage_limit.text.v1",
        code=Code.QUOTA_LIMITED,
        tier=E,
        line=_line(r"(?:ERROR: |Error: |■ )?You've hit your usage limit\. "),
        needles=("you've hit your",),
        why_narrow="Codex's plan-limit notice opening a line, the sentence and its full stop.",
    ),
    Rule(
        id="claude_code.invalid_api_key.v1",
        code=Code.AUTH_REQUIRED,
        tier=E,
        line=_line(r"(?:Internal error: |Error: )?Invalid API key · Please run /login$"),
        needles=("invalid api key",),
        why_narrow="Claude Code's whole-line notice for a refused key, nothing else on the line.",
    ),
    Rule(
        id="claude_code.credit_balance_too_low.v1",
        code=Code.BILLING_LIMITED,
        tier=E,
        line=_line(r"(?:Internal error: |Error: )?Credit balance is too low$"),
        needles=("credit balance is too low",),
        why_narrow="Claude Code's whole-line notice for an empty balance.",
    ),
    Rule(
        id="acp.claude.connection_error.v1",
        code=Code.NETWORK_UNAVAILABLE,
        tier=E,
        line=_line(_CLAUDE + r"Connection error\.$"),
        needles=("api error:",),
        why_narrow="Claude Code's whole line for a request that never got an answer.",
    ),
    Rule(
        id="acp.claude.request_timed_out.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=E,
        line=_line(_CLAUDE + r"Request timed out\.$"),
        needles=("api error:",),
        why_narrow="Claude Code's whole line for a provider that accepted and then said nothing.",
    ),
    Rule(
        id="python_sdk.connection_error.v1",
        code=Code.NETWORK_UNAVAILABLE,
        tier=E,
        sources=_AGENT_LOG,
        line=_line(r"(?:[a-z_][a-z0-9_]*\.)+APIConnectionError: Connection error\.$"),
        needles=("apiconnectionerror",),
        why_narrow="The Python SDKs' exception line, whole, and only in an agent's own log.",
    ),
    Rule(
        id="python_sdk.timeout.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=E,
        sources=_AGENT_LOG,
        line=_line(r"(?:[a-z_][a-z0-9_]*\.)+APITimeoutError: Request timed out\.$"),
        needles=("apitimeouterror",),
        why_narrow="The Python SDKs' timeout line, whole, and only in an agent's own log.",
    ),
    Rule(
        id="codex.retry_limit.text.v1",
        code=Code.RATE_LIMITED,
        tier=E,
        sources=_NOT_A_CHUNK,
        line=_line(r"(?:ERROR: )?exceeded retry limit, last status: 429\b"),
        needles=("exceeded retry limit",),
        why_narrow="Codex's line after its own retries of a 429; not from an answer chunk.",
    ),
    Rule(
        id="codex.stream_disconnected.text.v1",
        code=Code.TRUNCATED_STREAM,
        tier=E,
        sources=_NOT_A_CHUNK,
        line=_line(r"(?:ERROR: )?stream disconnected before completion: "),
        needles=("stream disconnected before completion",),
        why_narrow="Codex's own prefix for a cut response stream; not from an answer chunk.",
    ),
    Rule(
        id="google.quota_metric.per_day.v1",
        code=Code.QUOTA_LIMITED,
        tier=E,
        sources=_NOT_A_CHUNK,
        line=_line(
            r"Quota exceeded for quota metric '[^']{1,200}' and limit '[^']{0,200}per day\b"
        ),
        needles=("quota exceeded for quota metric",),
        why_narrow=(
            "Google's (Code Assist, Vertex) quota sentence whose limit is counted per day; not "
            "from an answer chunk, and the quoted limit must say 'per day'."
        ),
    ),
    Rule(
        id="google.quota_metric.per_minute.v1",
        code=Code.RATE_LIMITED,
        tier=E,
        sources=_NOT_A_CHUNK,
        line=_line(
            r"Quota exceeded for quota metric '[^']{1,200}' and limit '[^']{0,200}per minute\b"
        ),
        needles=("quota exceeded for quota metric",),
        why_narrow="The same sentence with a per-minute limit: a short wait, not a day.",
    ),
    Rule(
        id="gemini_cli.daily_quota.v1",
        code=Code.QUOTA_LIMITED,
        tier=E,
        line=_line(r"You have reached your daily \S{1,80} quota limit\."),
        needles=("quota limit",),
        why_narrow="Gemini CLI's daily-limit notice, the exact sentence opening the line.",
    ),
    Rule(
        id="google.current_quota.text.v1",
        code=Code.QUOTA_LIMITED,
        tier=E,
        sources=_NOT_A_CHUNK,
        line=_line(r"(?:\[API Error: )?You exceeded your current quota, please check your plan\b"),
        needles=("you exceeded your current quota",),
        why_narrow=(
            "Google's quota sentence as Gemini CLI prints it, with no status or quota id to say "
            "more; never from an answer chunk."
        ),
    ),
    # ---- broad: a provider token anywhere on a line, or the adapter's coarse judgement -----
    Rule(
        id="anthropic.overloaded_error.json_fragment.v2",
        code=Code.PROVIDER_OVERLOADED,
        tier=B,
        confidence=Confidence.MEDIUM,
        sources=_ERROR_BODY,
        line=_line(r".*\"type\": ?\"overloaded_error\""),
        needles=("overloaded_error",),
        why_narrow=(
            "The JSON member itself (quoted key and value) inside an error body's message (a "
            "gateway quoting the upstream's body). Only from an HTTP or stream error: JSON in an "
            "agent's chunk, a tool's output or a log line is never the failure."
        ),
    ),
    # ---- broad: error types and phrases that only an HTTP or stream error body may carry. They
    # come after every status and signature: they add a meaning only where nothing more specific
    # spoke (a body with no status, or a status no rule above names).
    Rule(
        id="anthropic.credit_balance_too_low.phrase.v2",
        code=Code.BILLING_LIMITED,
        tier=B,
        confidence=Confidence.MEDIUM,
        line=_line(r".*credit balance is too low", flags=re.IGNORECASE),
        needles=("credit balance is too low",),
        sources=_ERROR_BODY,
        why_narrow=(
            "The empty-balance sentence anywhere in an error body's message, when no error type "
            "or status said more; agent prose about credit never comes from an error body."
        ),
    ),
    Rule(
        id="openai.overloaded_code.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=B,
        confidence=Confidence.MEDIUM,
        provider_codes=frozenset({"overloaded"}),
        sources=_ERROR_BODY,
        why_narrow=(
            "OpenAI-compatible servers' overload code; a bare word, so only from an error body, "
            "and after the server_error type and the 5xx statuses it usually travels with."
        ),
    ),
    Rule(
        id="openai.rate_limit_types.v1",
        code=Code.RATE_LIMITED,
        tier=B,
        confidence=Confidence.MEDIUM,
        provider_codes=frozenset({"requests", "tokens", "throttling_error"}),
        sources=_ERROR_BODY,
        why_narrow=(
            "OpenAI's rate-limit types (requests, tokens) and LiteLLM's throttling_error: bare "
            "words, so only from an error body, after the codes and the 429 they come with."
        ),
    ),
    Rule(
        id="http.internal_error_type.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=B,
        confidence=Confidence.MEDIUM,
        provider_codes=frozenset({"internal_error"}),
        sources=_ERROR_BODY,
        why_narrow=(
            "A gateway's internal_error type with no status to go by; JSON-RPC's 'Internal "
            "error' from an agent is a message, not this type, and never an error body."
        ),
    ),
    Rule(
        id="anthropic.not_found_error.v1",
        code=Code.INVALID_REQUEST,
        tier=B,
        confidence=Confidence.MEDIUM,
        provider_codes=frozenset({"not_found_error"}),
        sources=_ERROR_BODY,
        why_narrow=(
            "Anthropic's not_found_error without its 404 (which names a wrong base URL first): "
            "the request names something that does not exist, on every attempt."
        ),
    ),
    Rule(
        id="evidence.kind.overload.v1",
        code=Code.PROVIDER_OVERLOADED,
        tier=B,
        confidence=Confidence.MEDIUM,
        kinds=frozenset({Kind.OVERLOAD}),
        why_narrow="The adapter's judgement, used only when no signature said more.",
    ),
    Rule(
        id="evidence.kind.rate_limit.v1",
        code=Code.RATE_LIMITED,
        tier=B,
        confidence=Confidence.MEDIUM,
        kinds=frozenset({Kind.RATE_LIMIT}),
        why_narrow="The adapter's judgement, used only when no signature said more.",
    ),
    Rule(
        id="evidence.kind.server.v1",
        code=Code.PROVIDER_UNAVAILABLE,
        tier=B,
        confidence=Confidence.MEDIUM,
        kinds=frozenset({Kind.SERVER}),
        why_narrow="The adapter's judgement, used only when no signature said more.",
    ),
    Rule(
        id="evidence.kind.auth.v1",
        code=Code.AUTH_REQUIRED,
        tier=B,
        confidence=Confidence.MEDIUM,
        kinds=frozenset({Kind.AUTH}),
        why_narrow="The adapter's judgement, used only when no signature said more.",
    ),
    Rule(
        id="evidence.kind.payment.v2",
        code=Code.BILLING_LIMITED,
        tier=B,
        confidence=Confidence.MEDIUM,
        kinds=frozenset({Kind.PAYMENT}),
        why_narrow="The adapter's judgement, used only when no signature said more.",
    ),
    Rule(
        id="evidence.kind.invalid_request.v1",
        code=Code.INVALID_REQUEST,
        tier=B,
        confidence=Confidence.MEDIUM,
        kinds=frozenset({Kind.INVALID_REQUEST}),
        why_narrow="The adapter's judgement, used only when no signature said more.",
    ),
)

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}
