"""The conversation the model sees: recent turns, compacted, within a token budget.

Turns are whole (a user message and everything after it), newest kept first, so tool_use and
tool_result blocks always stay paired. A turn is compacted once, when it is stored: long tool
results and tool inputs are cut, because the model needs to know what was done, not to reread
every note it once read (the audit trail keeps them whole).
"""

from __future__ import annotations

import json
from typing import Any

from bot.store import Turn

# Roughly four characters a token for English text and JSON; close enough to budget by.
CHARS_PER_TOKEN = 4
COMPACT_ABOVE = 600  # characters of a tool result or tool input string kept whole in history
COMPACT_KEEP = 300


def fit(turns: list[Turn], budget_tokens: int) -> list[dict[str, Any]]:
    """The newest turns that fit in ``budget_tokens``, oldest first, as one message list."""
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for turn in reversed(turns):
        cost = turn.tokens or estimate_tokens(turn.messages)
        if used + cost > budget_tokens:
            break  # an older turn that fits would leave a gap in the conversation
        kept.append(turn.messages)
        used += cost
    return [message for messages in reversed(kept) for message in messages]


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
