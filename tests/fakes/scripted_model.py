"""A zero-latency in-process model: ``enqueue`` replies, or give a ``handler`` of the messages.

It implements the runner's ``ModelClient`` seam, the way httpx's MockTransport stands in for a
network: used where the HTTP round trip to the fake server is not what is being tested (bench).
Given a listener, it streams each reply the way the real client does: the text word by word, and
each tool call as it begins.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import re
from collections import deque
from collections.abc import Callable
from typing import Any

from bot.runner import ModelReply, TextListener, Usage

_ids = itertools.count(1)


def say(text: str) -> ModelReply:
    """End the turn with text."""
    return ModelReply([{"type": "text", "text": text}], "end_turn", Usage(10, 5), "scripted")


def call(*calls: tuple[str, dict[str, Any]]) -> ModelReply:
    """Ask for tool calls."""
    blocks = [{"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": n, "input": i} for n, i in calls]
    return ModelReply(blocks, "tool_use", Usage(10, 5), "scripted")


class ScriptedModel:
    """Replies from a queue, then from ``handler`` (of the messages, and of the tool definitions too
    when it takes a ``tools`` argument)."""

    name = "scripted"

    def __init__(self, handler: Callable[..., ModelReply] | None = None) -> None:
        self.handler = handler
        self._with_tools = handler is not None and "tools" in inspect.signature(handler).parameters
        self.calls: list[list[dict[str, Any]]] = []
        self.tools_seen: list[list[dict[str, Any]]] = []  # the tool definitions of each call
        self._script: deque[ModelReply] = deque()

    def enqueue(self, *replies: ModelReply) -> None:
        """Answer the next calls with these."""
        self._script.extend(replies)

    async def complete(
        self,
        *,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        listener: TextListener | None = None,
    ) -> ModelReply:
        self.calls.append(messages)
        self.tools_seen.append(tools)
        if self._script:
            reply = self._script.popleft()
        elif self.handler is None:
            raise AssertionError("the scripted model ran out of replies")
        else:
            reply = self.handler(messages, tools=tools) if self._with_tools else self.handler(messages)
        if listener is not None:
            await stream(reply, listener)
        return reply


async def stream(reply: ModelReply, listener: TextListener) -> None:
    """Tell ``listener`` the reply as the real client would: its text word by word (yielding to the
    event loop between words, as a network read would), and each tool call as it begins."""
    written = False
    for block in reply.content:
        if block.get("type") == "tool_use":
            listener.tool_call(block["name"])
            written = False
        elif block.get("type") == "text" and block.get("text"):
            if written:
                listener.text("\n\n")
            for word in re.findall(r"\S*\s*", block["text"]):
                if word:
                    listener.text(word)
                    await asyncio.sleep(0)
            written = True
