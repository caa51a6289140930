"""Property tests: every stream decoder gives the same events however the bytes were chunked.

Valid streams come from the mock provider's own wire renderers (any text, thinking and tool call
the strategies draw, multi-byte characters included, so a cut can fall inside a UTF-8 sequence)
and from the recorded wire fixtures. Each is decoded whole and again cut at arbitrary byte
offsets; the items (events and wire metadata) must be identical. Bounded examples and no
deadline keep the default suite fast and free of wall-clock flakiness.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import httpx2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recovery.mock import anthropic_wire, openai_wire
from recovery.mock.recorded_bodies import WIRE_FIXTURES
from recovery.mock.steps import Finish, Plan, Reply, Start, Text, Thinking, Tool
from recovery.providers.anthropic import AnthropicDecoder
from recovery.providers.httpwire import SSEResponseStream
from recovery.providers.openai_compat import OpenAIDecoder
from recovery.providers.sse import SSEDecoder
from recovery.taxonomy import ProviderFailure

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REPLY = Reply(model="mock-1", input_tokens=7, message_id="msg_prop", include_usage=True)
DECODERS = {
    "anthropic": (anthropic_wire.render_stream, lambda: AnthropicDecoder(model="mock-1")),
    "openai": (openai_wire.render_stream, lambda: OpenAIDecoder(model="mock-1")),
}

chunk_text = st.text(min_size=1, max_size=12)  # any Unicode: é, 😀, CJK, control characters
texts = st.lists(chunk_text, min_size=1, max_size=5).map(tuple)
tool_arguments = st.dictionaries(
    st.text(max_size=6), st.integers() | st.text(max_size=8), max_size=3
)


@st.composite
def plans(draw) -> Plan:
    steps: list = [Start()]
    if draw(st.booleans()):
        steps.append(Thinking(draw(texts)))
    steps.append(Text(draw(texts)))
    stop = "end_turn"
    if draw(st.booleans()):
        encoded = json.dumps(draw(tool_arguments))
        cut = draw(st.integers(0, len(encoded)))
        pieces = tuple(p for p in (encoded[:cut], encoded[cut:]) if p)
        steps.append(Tool("toolu_prop", "append_note", pieces or ("{}",)))
        stop = "tool_use"
    steps.append(Finish(stop))
    return Plan(tuple(steps))


def rendered(wire: str, plan: Plan) -> bytes:
    render, _ = DECODERS[wire]
    return b"".join(item for item in render(plan, REPLY) if isinstance(item, bytes))


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


def decoded(wire: str, chunks: list[bytes]) -> tuple[list, str | None]:
    _, decoder = DECODERS[wire]
    stream = SSEResponseStream(
        response=httpx2.Response(200, content=iter(chunks)),
        decoder=decoder(),
        on_bytes=lambda n: None,
        provider_id=wire,
        model="mock-1",
    )
    items = []
    try:
        for item in stream.items():
            items.append(item)  # noqa: PERF402 - keeps what came before a failure
    except ProviderFailure as failure:
        return items, f"{failure.evidence.kind}:{failure.detail}"
    return items, None


@PROPERTY
@given(st.sampled_from(sorted(DECODERS)), plans(), st.lists(st.integers(0, 4000), max_size=12))
def test_any_chunking_of_a_rendered_stream_gives_the_same_events(wire, plan, cuts):
    data = rendered(wire, plan)
    whole = decoded(wire, [data])

    assert whole[1] is None  # the renderer's stream is valid: it decodes to a finished turn
    assert decoded(wire, split(data, cuts)) == whole


def fixture_streams() -> list[tuple[str, bytes]]:
    found = []
    for path in sorted(Path(WIRE_FIXTURES).glob("*.sse")):
        wire = "anthropic" if path.name.startswith("anthropic") else "openai"
        found.append((wire, path.read_bytes()))
    return found


@PROPERTY
@given(st.sampled_from(fixture_streams()), st.lists(st.integers(0, 3000), max_size=12))
def test_any_chunking_of_a_wire_fixture_gives_the_same_events_or_failure(fixture, cuts):
    wire, data = fixture
    assert decoded(wire, split(data, cuts)) == decoded(wire, [data])


@PROPERTY
@given(plans(), st.lists(st.integers(0, 4000), max_size=12), st.sampled_from([b"\r\n", b"\r"]))
def test_sse_events_do_not_depend_on_chunking_or_line_endings(plan, cuts, newline):
    data = rendered("anthropic", plan)
    once = SSEDecoder()
    whole = once.feed(data) + once.finish()
    other = data.replace(b"\n", newline)
    decoder = SSEDecoder()
    pieces = [event for chunk in split(other, cuts) for event in decoder.feed(chunk)]
    assert pieces + decoder.finish() == whole
