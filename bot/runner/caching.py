"""Prompt-cache breakpoints that move with the conversation.

The API caches the prompt (tools, system, messages) up to each block marked with
``cache_control``, at most four a request; a later request reads the longest cached prefix that
ends at one of its breakpoints or within about 20 blocks before one. Tools and system carry two
breakpoints of their own; the conversation gets the other two:

- on the message the previous model call of this run ended with (the first call: the end of the
  history), so the call reads everything the previous one wrote, however many blocks the last
  step added;
- on the newest message, so the next call (or the next turn) can read this one's prefix. The
  user's new message is the exception: it stays the plain string it arrived as (which every model
  client and test double reads), so the first call writes up to the end of the history and the
  second call marks the message instead, as the previous call's end.

The marks are added to a copy at request time; stored history never carries ``cache_control``,
so what a later turn sends for this one stays byte-identical to what was cached.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}


def with_breakpoints(messages: list[dict[str, Any]], previous_end: int) -> list[dict[str, Any]]:
    """``messages`` with cache breakpoints on message ``previous_end`` (if any) and the newest one
    (unless it is a string)."""
    marks = {previous_end} - {-1}
    if not isinstance(messages[-1]["content"], str):
        marks.add(len(messages) - 1)
    marked = list(messages)
    for i in marks:
        marked[i] = _marked(messages[i])
    return marked


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    # A string is the same prompt as one text block, which has somewhere to carry the mark.
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not blocks:
        return message
    return {**message, "content": [*blocks[:-1], {**blocks[-1], "cache_control": EPHEMERAL}]}
