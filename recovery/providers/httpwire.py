"""Reading an SSE response body into wire items, shared by the HTTP adapters.

Transport errors while reading become Evidence here, so each adapter only writes the part that
differs between wires: its event decoder.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import httpx2

from recovery.clock import Clock
from recovery.providers.base import ByteObserver, WireItem
from recovery.providers.failures import (
    connection_failure,
    status_failure,
    stream_error_failure,
    wire_failure,
)
from recovery.providers.sse import ServerSentEvent, SSEDecodeError, SSEDecoder
from recovery.taxonomy import Kind, Phase, ProviderFailure, Source

if TYPE_CHECKING:  # the two SDKs' status errors, for their shared .status_code and .response
    import anthropic
    import openai


class EventDecoder(Protocol):
    def feed(self, event: ServerSentEvent) -> list[WireItem]:
        """Items for one event; raises ProviderFailure for an error event or a malformed one."""
        ...

    def finish(self) -> list[WireItem]:
        """End of body: the closing items, or ProviderFailure (truncated) without a terminal."""
        ...


class SSEResponseStream:
    __slots__ = ("_decoder", "_model", "_on_bytes", "_provider_id", "_response")

    def __init__(
        self,
        *,
        response: httpx2.Response,
        decoder: EventDecoder,
        on_bytes: ByteObserver,
        provider_id: str,
        model: str,
    ) -> None:
        self._response = response
        self._decoder = decoder
        self._on_bytes = on_bytes
        self._provider_id = provider_id
        self._model = model

    def items(self) -> Iterator[WireItem]:
        sse = SSEDecoder()
        decoder = self._decoder
        on_bytes = self._on_bytes
        try:
            for chunk in self._response.iter_bytes():
                on_bytes(len(chunk))
                for event in sse.feed(chunk):
                    yield from decoder.feed(event)
            for event in sse.finish():
                yield from decoder.feed(event)
        except SSEDecodeError as error:
            raise self._failure(
                Kind.MALFORMED, Phase.PROTOCOL, f"stream is not UTF-8 text: {error}"
            ) from None
        except httpx2.TimeoutException:
            raise self._failure(
                Kind.TIMEOUT, Phase.STREAM, "no bytes within the idle timeout"
            ) from None
        except (httpx2.TransportError, httpx2.StreamError) as error:
            raise self._failure(
                Kind.NETWORK,
                Phase.STREAM,
                f"connection lost mid-stream: {type(error).__name__}: {error}",
            ) from None
        yield from decoder.finish()

    def close(self) -> None:
        self._response.close()

    def _failure(self, kind: Kind, phase: Phase, detail: str) -> ProviderFailure:
        return wire_failure(
            provider_id=self._provider_id, model=self._model, kind=kind, phase=phase, detail=detail
        )


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """The exception classes one official SDK raises before a response starts streaming."""

    status: type[anthropic.APIStatusError | openai.APIStatusError]
    timeout: type[Exception]
    connection: type[Exception]


def sse_open(
    *,
    create: Callable[[], Any],
    errors: SdkErrors,
    decoder: EventDecoder,
    on_bytes: ByteObserver,
    provider_id: str,
    model: str,
    clock: Clock,
) -> SSEResponseStream:
    """Send the request through the SDK (``create`` returns its raw Stream) and hand back our
    own SSE reader over its response, decoding every pre-stream failure into evidence."""
    try:
        stream = create()
    except errors.status as error:
        raise status_failure(
            provider_id=provider_id,
            model=model,
            status=error.status_code,
            headers=error.response.headers,
            body=error.response.content,
            clock=clock,
        ) from None
    except errors.timeout as error:  # a subclass of the connection error: checked first
        raise connection_failure(
            error, provider_id=provider_id, model=model, timed_out=True
        ) from None
    except errors.connection as error:
        raise connection_failure(
            error, provider_id=provider_id, model=model, timed_out=False
        ) from None
    response: httpx2.Response = stream.response
    if "text/event-stream" not in response.headers.get("content-type", ""):
        try:
            raise json_body_failure(
                response=response, provider_id=provider_id, model=model, clock=clock
            )
        finally:
            response.close()
    return SSEResponseStream(
        response=response, decoder=decoder, on_bytes=on_bytes, provider_id=provider_id, model=model
    )


_BODY_LIMIT_BYTES = 256 * 1024  # an error body is small; a huge one is cut, never buffered whole


def json_body_failure(
    *, response: httpx2.Response, provider_id: str, model: str, clock: Clock
) -> ProviderFailure:
    """A 200 that is not an event stream: a gateway answering an error as plain JSON, or a body
    we cannot stream at all. An error body (``{"error": ...}`` in any shape, or Anthropic's
    ``{"type": "error"}``) is judged by the catalogue like an in-stream error, its hints (Retry-
    After, x-should-retry) kept; anything else is a malformed stream that says what it got."""
    body = _bounded_body(response)
    payload = _json(body)
    if _is_error_body(payload):
        headed = status_failure(
            provider_id=provider_id,
            model=model,
            status=response.status_code,
            headers=response.headers,
            body=body,
            clock=clock,
        ).evidence
        failure = stream_error_failure(
            provider_id=provider_id, model=model, payload=payload, status=response.status_code
        )
        evidence = replace(
            failure.evidence,
            source=Source.HTTP,
            retry_after_ms=headed.retry_after_ms,
            reset_at_ms=headed.reset_at_ms,
            should_retry=headed.should_retry,
        )
        return ProviderFailure(evidence, failure.detail)
    content_type = response.headers.get("content-type", "") or "no content type"
    shape = "a JSON body" if payload is not None else "a body"
    return wire_failure(
        provider_id=provider_id,
        model=model,
        kind=Kind.MALFORMED,
        phase=Phase.PROTOCOL,
        source=Source.HTTP,
        detail=f"expected an event stream, got {shape} ({content_type[:64]})",
        excerpt=body[:2048].decode("utf-8", errors="replace"),
    )


def _is_error_body(payload: Any) -> bool:
    if not isinstance(payload, dict):
        return False
    return payload.get("error") not in (None, "", {}) or payload.get("type") == "error"


def _bounded_body(response: httpx2.Response) -> bytes:
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) >= _BODY_LIMIT_BYTES:
            break
    return bytes(body[:_BODY_LIMIT_BYTES])


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None
