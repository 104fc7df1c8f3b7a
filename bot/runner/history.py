"""The conversation the model sees: recent turns, compacted, within a token budget.

Turns are whole (a user message and everything after it), newest kept first, so tool_use and
tool_result blocks always stay paired. A turn is compacted once, when it is stored: long tool
results and tool inputs are cut, because the model needs to know what was done, not to reread
every note it once read (the audit trail keeps them whole).

The window of turns moves in chunks, not turn by turn: it starts on a turn whose number is a
multiple of ``chunk`` (plus one), so the start of the conversation the model sees, and with it the
cached prompt prefix, stays the same for ``chunk`` turns at a time instead of changing on every
message once the window is full. Every turn is closed on the way out (``bot.runner.closing``), so
turns stored open by older versions reach the model well-formed.
"""

from __future__ import annotations

import json
from typing import Any

from bot.runner.closing import closed
from bot.store import Turn

# Roughly four characters a token for English text and JSON; close enough to budget by.
CHARS_PER_TOKEN = 4
COMPACT_ABOVE = 600  # characters of a tool result or tool input string kept whole in history
COMPACT_KEEP = 300


def fit(turns: list[Turn], budget_tokens: int, *, chunk: int = 1) -> list[dict[str, Any]]:
    """The newest turns that fit in ``budget_tokens``, oldest first, as one message list, starting
    on a chunk boundary when one fits (otherwise the newest turns that fit)."""
    costs = [turn.tokens or estimate_tokens(turn.messages) for turn in turns]
    start = _newest_fitting(costs, budget_tokens)
    for candidate in range(start, len(turns)):
        # A turn without a number (0) is a boundary, which is the turn-by-turn window.
        if (turns[candidate].number - 1) % chunk == 0 or turns[candidate].number == 0:
            start = candidate
            break
    return [message for turn in turns[start:] for message in closed(turn.messages)]


def _newest_fitting(costs: list[int], budget_tokens: int) -> int:
    """The index of the oldest turn from which every newer turn fits in the budget, without gaps."""
    used = 0
    for i in range(len(costs) - 1, -1, -1):
        if used + costs[i] > budget_tokens:
            return i + 1  # an older turn that fits would leave a gap in the conversation
        used += costs[i]
    return 0


def compact(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn as it is kept in history: long tool results and tool inputs cut short."""
    return [_compact_message(message) for message in messages]


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A cheap estimate of what ``messages`` cost in input tokens."""
    return len(json.dumps(messages, ensure_ascii=False)) // CHARS_PER_TOKEN + 1


def _compact_message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {**message, "content": [_compact_block(block) for block in content]}


def _compact_block(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
        return {**block, "content": _shorten(block["content"])}
    if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
        return {**block, "input": {k: _shorten(v) if isinstance(v, str) else v for k, v in block["input"].items()}}
    return block


def _shorten(text: str) -> str:
    if len(text) <= COMPACT_ABOVE:
        return text
    return f"{text[:COMPACT_KEEP]}… [{len(text) - COMPACT_KEEP} characters compacted from history]"
