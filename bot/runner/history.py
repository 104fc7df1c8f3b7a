"""The conversation the model sees: recent turns, compacted, within a token budget.

Turns are whole (a user message and everything after it), newest kept first, so tool_use and
tool_result blocks always stay paired. A turn is compacted once, when it is stored: long tool
results and tool inputs are cut, because the model needs to know what was done, not to reread
every note it once read (the audit trail keeps them whole).

Once old turns must go, the window does not slide turn by turn: that would change the start of
the conversation the model sees, and so miss the prompt cache, on every message. Its first turn is
the one with the lowest rank (a hash of its row id) among the turns it may start at, which keeps at
least half the window. As the window moves, that turn stays the lowest until it is dropped or a
lower one arrives: the start holds for several messages at a time, with no state kept anywhere
(winnowing, as in document fingerprinting). Every turn is closed on the way out
(``bot.runner.closing``), so turns stored open by older versions reach the model well-formed.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import OrderedDict
from typing import Any

from bot.images import without_pixels
from bot.runner.closing import closed
from bot.store import Turn

# Roughly four characters a token for English text and JSON; close enough to budget by.
CHARS_PER_TOKEN = 4
COMPACT_ABOVE = 600  # characters of a tool result or tool input string kept whole in history
COMPACT_KEEP = 300
# Closed forms kept, for the history windows of a few hundred active conversations (as the store's decoded turns).
_CLOSED_KEPT = 5000
# A stored turn's closed form by the id() of its decoded messages. The store hands out one shared,
# never-changed list per stored turn, so every message re-reading its window closes each turn once
# instead of on every load. The entry holds that list, so its id() cannot be reused while cached.
_closed: OrderedDict[int, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = OrderedDict()


def fit(turns: list[Turn], budget_tokens: int, *, window: int = 0) -> list[dict[str, Any]]:
    """The newest turns that fit in ``budget_tokens``, oldest first, as one message list.

    ``window`` is how many turns the store was asked for: when it returned that many, or the
    budget drops some, the start is chosen to hold across messages (see the module docstring).
    """
    costs = [turn.tokens or estimate_tokens(turn.messages) for turn in turns]
    start = _newest_fitting(costs, budget_tokens)
    if window > 1 and (start > 0 or len(turns) >= window):
        latest = len(turns) - window // 2  # the window keeps at least half its turns
        if latest > start:
            start = min(range(start, latest + 1), key=lambda i: _rank(turns[i].id))
    return [message for turn in turns[start:] for message in _closed_turn(turn)]


def _closed_turn(turn: Turn) -> list[dict[str, Any]]:
    if not turn.id:  # not read from the store: nothing says its messages stay as they are
        return closed(turn.messages)
    key = id(turn.messages)
    kept = _closed.get(key)
    if kept is not None and kept[0] is turn.messages:
        _closed.move_to_end(key)
        return kept[1]
    messages = closed(turn.messages)
    _closed[key] = (turn.messages, messages)
    if len(_closed) > _CLOSED_KEPT:
        _closed.popitem(last=False)
    return messages


@functools.lru_cache(maxsize=_CLOSED_KEPT)  # a pure function of the id, asked of the same turns message after message
def _rank(turn_id: int) -> bytes:
    return hashlib.blake2b(turn_id.to_bytes(8, "little"), digest_size=8).digest()


def _newest_fitting(costs: list[int], budget_tokens: int) -> int:
    """The index of the oldest turn from which every newer turn fits in the budget, without gaps."""
    used = 0
    for i in range(len(costs) - 1, -1, -1):
        if used + costs[i] > budget_tokens:
            return i + 1  # an older turn that fits would leave a gap in the conversation
        used += costs[i]
    return 0


def compact(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn as it is kept in history: long tool results and tool inputs cut short, and each image
    replaced by a line saying it was shown (the label before it names its file), so no later turn
    sends its pixels again."""
    return [_compact_message(message) for message in messages]


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A cheap estimate of what ``messages`` cost in input tokens."""
    return estimate_json_tokens(json.dumps(messages, ensure_ascii=False))


def estimate_json_tokens(text: str) -> int:
    """:func:`estimate_tokens` of messages already encoded as JSON (without ASCII escapes)."""
    return len(text) // CHARS_PER_TOKEN + 1


def _compact_message(message: dict[str, Any]) -> dict[str, Any]:
    content = without_pixels(message.get("content"))
    if not isinstance(content, list):
        return message
    return {**message, "content": [_compact_block(block) for block in content]}


def _compact_block(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
        return {**block, "content": _shorten(block["content"])}
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        # A tool's content blocks (an MCP server's), whose images without_pixels has made lines of.
        return {**block, "content": _shorten(" ".join(str(part.get("text", "")) for part in block["content"]))}
    if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
        return {**block, "input": {k: _shorten(v) if isinstance(v, str) else v for k, v in block["input"].items()}}
    return block


def _shorten(text: str) -> str:
    if len(text) <= COMPACT_ABOVE:
        return text
    return f"{text[:COMPACT_KEEP]}… [{len(text) - COMPACT_KEEP} characters compacted from history]"
