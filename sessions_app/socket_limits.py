"""What a socket client can make the server do: how deep a frame may nest, how often it may ask
for a snapshot. Plain functions and values, no Django, so they are tested without a socket."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The protocol's frames are flat ({"type": "resume", "last_seq": 4}); this leaves room and stops
# json.loads long before Python's recursion limit (a 16 KiB frame can nest 8,000 deep).
MAX_FRAME_DEPTH = 16


class FrameRefused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def frame_depth_exceeds(text: str, *, max_depth: int) -> bool:
    """True when arrays/objects in the JSON ``text`` nest deeper than ``max_depth``. Brackets
    inside strings do not count; the text need not be valid JSON (json.loads judges that)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif char in "]}":
            depth -= 1
    return False


def frame_parse(text: str, *, max_depth: int = MAX_FRAME_DEPTH) -> dict[str, Any]:
    """The client frame as a dict, or FrameRefused saying why not."""
    if frame_depth_exceeds(text, max_depth=max_depth):
        raise FrameRefused("too_deep", f"Frame is nested too deeply (more than {max_depth}).")
    try:
        frame = json.loads(text)
    except ValueError:
        raise FrameRefused("bad_json", "Frame is not valid JSON.") from None
    if not isinstance(frame, dict):
        raise FrameRefused("bad_frame", "Frame must be a JSON object.")
    return frame


@dataclass(slots=True)
class TokenBucket:
    """``capacity`` requests at once, refilled at ``per_second``; ``clock`` is injected (seconds,
    monotonic) so tests step time instead of sleeping."""

    capacity: float
    per_second: float
    clock: Callable[[], float] = time.monotonic
    tokens: float = field(init=False)
    updated: float = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = self.capacity
        self.updated = self.clock()

    def take(self) -> bool:
        """Spend one token if there is one; False means over the limit (nothing spent)."""
        now = self.clock()
        elapsed = max(0.0, now - self.updated)
        self.tokens = min(self.capacity, self.tokens + elapsed * self.per_second)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def seconds_until_next(self) -> float:
        return max(0.0, (1 - self.tokens) / self.per_second) if self.per_second > 0 else 0.0
