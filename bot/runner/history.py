"""The conversation the model sees: recent turns, compacted, within a token budget.

Turns are whole (a user message and everything after it), newest kept first, so tool_use and
tool_result blocks always stay paired. Old tool results and long tool inputs are compacted:
the model needs to know what was done, not to reread every note it once read.
"""

from __future__ import annotations

import json
from typing import Any

# Roughly four characters a token for English text and JSON; close enough to budget by.
CHARS_PER_TOKEN = 4
COMPACT_ABOVE = 600  # characters of a tool result or tool input string kept whole in history
COMPACT_KEEP = 300


def fit(turns: list[list[dict[str, Any]]], budget_tokens: int) -> list[dict[str, Any]]:
    """The newest turns that fit in ``budget_tokens``, compacted, oldest first, as one message list."""
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for turn in reversed(turns):
        compacted = [_compact_message(message) for message in turn]
        cost = estimate_tokens(compacted)
        if kept and used + cost > budget_tokens:
            break
        if not kept and cost > budget_tokens:
            break  # even the newest turn alone is too big: start afresh rather than overflow
        kept.append(compacted)
        used += cost
    return [message for turn in reversed(kept) for message in turn]


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
