"""A zero-latency in-process model: ``enqueue`` replies, or give a ``handler`` of the messages.

It implements the runner's ``ModelClient`` seam, the way httpx's MockTransport stands in for a
network: used where the HTTP round trip to the fake server is not what is being tested (bench).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

from bot.runner import ModelReply, Usage

_ids = itertools.count(1)


def say(text: str) -> ModelReply:
    """End the turn with text."""
    return ModelReply([{"type": "text", "text": text}], "end_turn", Usage(10, 5), "scripted")


def call(*calls: tuple[str, dict[str, Any]]) -> ModelReply:
    """Ask for tool calls."""
    blocks = [{"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": n, "input": i} for n, i in calls]
    return ModelReply(blocks, "tool_use", Usage(10, 5), "scripted")


class ScriptedModel:
    """Replies from a queue, then from ``handler``."""

    name = "scripted"

    def __init__(self, handler: Callable[[list[dict[str, Any]]], ModelReply] | None = None) -> None:
        self.handler = handler
        self.calls: list[list[dict[str, Any]]] = []
        self._script: deque[ModelReply] = deque()

    def enqueue(self, *replies: ModelReply) -> None:
        """Answer the next calls with these."""
        self._script.extend(replies)

    async def complete(
        self, *, system: list[dict[str, Any]], messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelReply:
        self.calls.append(messages)
        if self._script:
            return self._script.popleft()
        if self.handler is None:
            raise AssertionError("the scripted model ran out of replies")
        return self.handler(messages)
