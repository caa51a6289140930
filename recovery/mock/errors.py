"""Error responses as each provider really sends them: status, headers and body per wire."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from recovery.mock.steps import Fail, Failure

HUGE_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    status: int
    headers: dict[str, str]
    body: dict

    def encoded(self) -> bytes:
        return json.dumps(self.body).encode()


def _rfc3339_in(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


def anthropic_error(fail: Fail) -> ErrorResponse:
    def envelope(kind: str, message: str) -> dict:
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": "req_mock01",
        }

    match fail.failure:
        case Failure.OVERLOADED:
            # Anthropic sends no Retry-After with a 529 as a rule; a scenario may ask for one.
            headers = {} if fail.retry_after_s is None else {"retry-after": str(fail.retry_after_s)}
            return ErrorResponse(
                fail.status or 529, headers, envelope("overloaded_error", "Overloaded")
            )
        case Failure.RATE_LIMITED:
            seconds = fail.retry_after_s if fail.retry_after_s is not None else 1
            headers = {
                "retry-after": str(seconds),
                "anthropic-ratelimit-requests-reset": _rfc3339_in(seconds),
                "anthropic-ratelimit-tokens-reset": _rfc3339_in(seconds),
            }
            message = "This request would exceed the rate limit for your organization."
            return ErrorResponse(fail.status or 429, headers, envelope("rate_limit_error", message))
        case Failure.SERVER_ERROR:
            return ErrorResponse(
                fail.status or 500, {}, envelope("api_error", "Internal server error")
            )
        case Failure.QUOTA:
            message = "Your credit balance is too low to access the Anthropic API."
            return ErrorResponse(fail.status or 402, {}, envelope("billing_error", message))
        case Failure.AUTH:
            return ErrorResponse(
                fail.status or 401, {}, envelope("authentication_error", "invalid x-api-key")
            )
        case Failure.HUGE:
            return ErrorResponse(
                fail.status or 500, {}, envelope("api_error", "x" * HUGE_BODY_BYTES)
            )
        case Failure.BAD_REQUEST:
            return ErrorResponse(
                fail.status or 400, {}, envelope("invalid_request_error", fail.message)
            )
        case Failure.NOT_FOUND:
            return ErrorResponse(fail.status or 404, {}, envelope("not_found_error", fail.message))
    return _gateway_error(fail)


def openai_error(fail: Fail) -> ErrorResponse:
    def envelope(message: str, kind: str, code: str | None) -> dict:
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    match fail.failure:
        case Failure.OVERLOADED:
            message = "The server is overloaded or not ready yet."
            return ErrorResponse(
                fail.status or 503, {}, envelope(message, "server_error", "overloaded")
            )
        case Failure.RATE_LIMITED:
            seconds = fail.retry_after_s if fail.retry_after_s is not None else 1
            headers = {
                "retry-after": str(seconds),
                "x-ratelimit-reset-requests": f"{seconds}s",
                "x-ratelimit-reset-tokens": f"{seconds}s",
            }
            message = (
                f"Rate limit reached for requests per min (RPM). Please try again in {seconds}s."
            )
            return ErrorResponse(
                fail.status or 429, headers, envelope(message, "requests", "rate_limit_exceeded")
            )
        case Failure.SERVER_ERROR:
            message = "The server had an error while processing your request. Sorry about that!"
            return ErrorResponse(fail.status or 500, {}, envelope(message, "server_error", None))
        case Failure.QUOTA:
            message = "You exceeded your current quota, please check your plan and billing details."
            return ErrorResponse(
                fail.status or 429,
                {},
                envelope(message, "insufficient_quota", "insufficient_quota"),
            )
        case Failure.AUTH:
            message = "Incorrect API key provided: sk-test-****0000."
            return ErrorResponse(
                fail.status or 401,
                {},
                envelope(message, "invalid_request_error", "invalid_api_key"),
            )
        case Failure.HUGE:
            return ErrorResponse(
                fail.status or 500, {}, envelope("x" * HUGE_BODY_BYTES, "server_error", None)
            )
        case Failure.BAD_REQUEST:
            return ErrorResponse(
                fail.status or 400, {}, envelope(fail.message, "invalid_request_error", None)
            )
        case Failure.NOT_FOUND:
            return ErrorResponse(
                fail.status or 404, {}, envelope(fail.message, "invalid_request_error", None)
            )
    return _gateway_error(fail)


# google.rpc.Code names as the Gemini API pairs them with HTTP statuses.
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
    529: "UNAVAILABLE",
}
_GOOGLE_MESSAGES = {
    500: (
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting"
    ),
    502: "Bad Gateway",
    503: "The service is currently unavailable.",
    504: "Deadline expired before operation could complete.",
}


def _google_type(name: str) -> str:
    return f"type.googleapis.com/google.rpc.{name}"


def gemini_error(fail: Fail) -> ErrorResponse:
    """The Gemini API's google.rpc.Status envelope: {"error": {code, message, status, details?}}."""

    def envelope(status: int, message: str, details: list[dict] | None = None) -> ErrorResponse:
        error: dict = {"code": status, "message": message, "status": _GOOGLE_STATUS.get(status)}
        if details:
            error["details"] = details
        return ErrorResponse(status, {}, {"error": error})

    match fail.failure:
        case Failure.OVERLOADED:
            return envelope(fail.status or 503, "The model is overloaded. Please try again later.")
        case Failure.RATE_LIMITED:
            # Google says when to come back in the body (RetryInfo), not in a Retry-After header.
            seconds = fail.retry_after_s if fail.retry_after_s is not None else 1
            retry = {"@type": _google_type("RetryInfo"), "retryDelay": f"{seconds}s"}
            message = "Resource has been exhausted (e.g. check quota)."
            return envelope(fail.status or 429, message, [retry])
        case Failure.SERVER_ERROR:
            status = fail.status or 500
            return envelope(status, _GOOGLE_MESSAGES.get(status, _GOOGLE_MESSAGES[500]))
        case Failure.QUOTA:
            message = (
                "You exceeded your current quota, please check your plan and billing details. "
                "For more information on this error, head to: "
                "https://ai.google.dev/gemini-api/docs/rate-limits."
            )
            quota = {
                "@type": _google_type("QuotaFailure"),
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_requests",
                        "quotaId": "GenerateRequestsPerDayPerProjectPerModel",
                    }
                ],
            }
            return envelope(fail.status or 429, message, [quota])
        case Failure.AUTH:
            if fail.status == 403:  # no key at all
                message = (
                    "Method doesn't allow unregistered callers (callers without established "
                    "identity). Please use API Key or other form of API consumer identity to "
                    "call this API."
                )
                return envelope(403, message)
            info = {
                "@type": _google_type("ErrorInfo"),
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
            }
            return envelope(
                fail.status or 400, "API key not valid. Please pass a valid API key.", [info]
            )
        case Failure.HUGE:
            return envelope(fail.status or 500, "x" * HUGE_BODY_BYTES)
        case Failure.BAD_REQUEST:
            return envelope(fail.status or 400, fail.message)
        case Failure.NOT_FOUND:
            return envelope(fail.status or 404, fail.message)
    return _gateway_error(fail)


def _gateway_error(fail: Fail) -> ErrorResponse:
    if fail.failure is Failure.ECHO_CREDENTIALS:
        message = f"upstream rejected the request sent with credential {fail.echoed}"
        return ErrorResponse(
            400, {}, {"error": {"message": message, "type": "invalid_request_error"}}
        )
    if fail.failure is Failure.OPENROUTER:
        status = fail.status or 502
        body = {
            "error": {
                "code": status,
                "message": "Provider returned error",
                "metadata": {"provider_name": "Anthropic", "raw": '{"type":"overloaded_error"}'},
            }
        }
        return ErrorResponse(status, {}, body)
    status = fail.status or 429
    headers = {"retry-after": "1"} if status == 429 else {}
    body = {
        "error": {
            "message": (
                "litellm.RateLimitError: AnthropicException - Overloaded. Received Model Group=mock"
            ),
            "type": "None" if status != 429 else "throttling_error",
            "param": None,
            "code": str(status),
        }
    }
    return ErrorResponse(status, headers, body)
