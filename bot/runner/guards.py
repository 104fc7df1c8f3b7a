"""Guards that stop a runaway run, and the truncation that keeps tool results readable."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

REPEAT_LIMIT = 3
REPEAT_WINDOW = 10
TRUNCATE_KEEP_WORDS = 500

# Built once (json.dumps with options builds a new encoder on every call).
_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode


class CallGuard:
    """Counts a run's tool calls and says when the run must stop.

    Two reasons stop a run: the cap on tool calls, and the same tool with the same input
    (compared canonically) ``REPEAT_LIMIT`` times within the last ``REPEAT_WINDOW`` calls.
    """

    def __init__(self, max_calls: int) -> None:
        self.max_calls = max_calls
        self.calls = 0
        self.recent: deque[str] = deque(maxlen=REPEAT_WINDOW)

    def admit(self, name: str, tool_input: Any) -> str | None:
        """Count one call; return why the run must stop before it, or None to go ahead."""
        if self.calls >= self.max_calls:
            return f"the run reached its limit of {self.max_calls} tool calls"
        key = name + ":" + _canonical(tool_input)
        self.recent.append(key)
        if self.recent.count(key) >= REPEAT_LIMIT:
            return f"{name} was called with the same input {REPEAT_LIMIT} times within {REPEAT_WINDOW} calls"
        self.calls += 1
        return None


def truncate_middle(text: str, keep: int = TRUNCATE_KEEP_WORDS) -> str:
    """Keep the first and last ``keep`` words of a long text, with an ``[N words omitted]`` marker."""
    words = text.split(" ")
    if len(words) <= 2 * keep:
        return text
    omitted = len(words) - 2 * keep
    return " ".join(words[:keep]) + f" [{omitted} words omitted] " + " ".join(words[-keep:])
