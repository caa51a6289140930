"""Guarded-stream overhead against raw SDK iteration of the same 5,000-event stream, and
against the guard's own decoder without the fence (the guard's cost alone).

Both arms read `/long:5000` from the in-process mock server over real HTTP, interleaved in one
run (raw, guarded, raw, guarded, ...) so machine load hits both alike. Reported: median wall
time per stream and guarded/raw ratio (target <= 1.10).

    python -m benchmarks.bench_guard
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import anthropic
import openai

from recovery.clock import SystemClock
from recovery.guard import CancelToken, open_stream
from recovery.mock.testing import running_mock_server
from recovery.model_call import ConversationTurn, ModelCall, TextPart
from recovery.providers import StreamTimeouts, TargetConfig, leased_adapter
from recovery.stream_events import TextDelta

EVENTS = 5000
REPEATS = 21  # medians of 21 interleaved pairs: stable on a shared, noisy machine
TARGET_RATIO = 1.10
PROMPT = f"/long:{EVENTS} benchmark"


def _raw_anthropic(url: str) -> Callable[[], int]:
    client = anthropic.Anthropic(api_key="sk-ant-test-000", base_url=url, max_retries=0)

    def run() -> int:
        count = 0
        stream = client.messages.create(
            model="mock-1",
            max_tokens=64,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
        )
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                count += 1
        return count

    return run


def _raw_openai(url: str) -> Callable[[], int]:
    client = openai.OpenAI(api_key="sk-test-000", base_url=f"{url}/v1", max_retries=0)

    def run() -> int:
        count = 0
        stream = client.chat.completions.create(
            model="mock-1",
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                count += 1
        return count

    return run


def _guarded(target: TargetConfig) -> Callable[[], int]:
    call = ModelCall(model="mock-1", turns=(ConversationTurn("user", (TextPart(PROMPT),)),))

    def run() -> int:
        return sum(
            1
            for event in open_stream(target, call, cancel=CancelToken())
            if isinstance(event, TextDelta)
        )

    return run


def _adapter_only(target: TargetConfig) -> Callable[[], int]:
    """The same decoder without the fence and watchdog: isolates what the guard itself costs."""
    call = ModelCall(model="mock-1", turns=(ConversationTurn("user", (TextPart(PROMPT),)),))
    clock = SystemClock()

    def run() -> int:
        # Leased per stream, as the guard does, so both sides pay the cache's lookup.
        with leased_adapter(target, timeouts=StreamTimeouts()) as adapter:
            stream = adapter.open(call, on_bytes=lambda count: None, clock=clock)
            try:
                return sum(1 for item in stream.items() if isinstance(item, TextDelta))
            finally:
                stream.close()

    return run


def _timed(run: Callable[[], int]) -> float:
    started = time.perf_counter()
    count = run()
    elapsed = time.perf_counter() - started
    if count != EVENTS:
        raise RuntimeError(f"expected {EVENTS} text events, got {count}")
    return elapsed


def _compare(name: str, raw: Callable[[], int], guarded: Callable[[], int], repeats: int) -> dict:
    raw(), guarded()  # warm connections, imports and caches before measuring
    raw_s, guarded_s = [], []
    for _ in range(repeats):
        raw_s.append(_timed(raw))
        guarded_s.append(_timed(guarded))
    raw_median = statistics.median(raw_s)
    guarded_median = statistics.median(guarded_s)
    ratio = guarded_median / raw_median
    return {
        "name": name,
        "events": EVENTS,
        "repeats": repeats,
        "baseline_median_ms": round(raw_median * 1000, 2),
        "guarded_median_ms": round(guarded_median * 1000, 2),
        "ratio": round(ratio, 3),
        "target": f"<= {TARGET_RATIO}",
        "ok": ratio <= TARGET_RATIO,
    }


def run(repeats: int = REPEATS) -> list[dict]:
    with running_mock_server() as url:
        anthropic_target = TargetConfig(
            "anthropic", url, "mock-1", "sk-ant-test-000", "bench-anthropic"
        )
        openai_target = TargetConfig("openai", f"{url}/v1", "mock-1", "sk-test-000", "bench-openai")
        # Rows 1-2: the comparison (raw SDK iteration builds a pydantic model per event;
        # the guard decodes JSON itself, so it can come out faster). Rows 3-4: the fence and
        # watchdog alone, over the identical decoder.
        return [
            _compare(
                "vs_raw_sdk.anthropic", _raw_anthropic(url), _guarded(anthropic_target), repeats
            ),
            _compare("vs_raw_sdk.openai", _raw_openai(url), _guarded(openai_target), repeats),
            _compare(
                "vs_same_decoder.anthropic",
                _adapter_only(anthropic_target),
                _guarded(anthropic_target),
                repeats,
            ),
            _compare(
                "vs_same_decoder.openai",
                _adapter_only(openai_target),
                _guarded(openai_target),
                repeats,
            ),
        ]


def main() -> None:
    rows = run()
    columns = list(rows[0])
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in rows:
        print("  ".join(str(row[c]).ljust(w) for c, w in zip(columns, widths, strict=True)))


if __name__ == "__main__":
    main()
