"""Closed turns: every stored turn is a conversation the API accepts and the model reads as over.

A turn is closed when its roles alternate starting with the user, every ``tool_use`` is answered
by a ``tool_result`` in the next message, no message is empty, and it ends on an assistant
message. A run that the model did not end itself (a guard stopped it, a tool call was cut off)
ends on a short assistant note saying how it ended; otherwise the next user message would follow
the stopped run's tool results and the API would merge the two, so the model would read the new
message as the continuation of the loop it was stopped in.

``closed`` changes nothing in a turn that is already closed, so what later turns send for it stays
byte-identical (and so cacheable); it also repairs turns stored open by older versions.
"""

from __future__ import annotations

from typing import Any

NOT_RUN = "Not run: the run ended before this call."
UNFINISHED = "(This turn ended without a reply.)"


def ending_note(reason: str | None) -> str:
    """The assistant note that closes a run the model did not end itself."""
    return f"(Run stopped: {reason}.)" if reason else UNFINISHED


def closed(messages: list[dict[str, Any]], ending: str = UNFINISHED) -> list[dict[str, Any]]:
    """``messages`` (one turn) made well-formed, with ``ending`` as the last word when the model had none."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = message.get("role"), _blocks(message)
        if role not in ("user", "assistant") or not blocks:
            continue
        if out and out[-1]["role"] == role:  # the API would merge them; say so explicitly
            out[-1] = {"role": role, "content": [*_blocks(out[-1]), *blocks]}
        elif out or role == "user":
            unchanged = isinstance(message["content"], str) or blocks == message["content"]
            out.append(message if unchanged else {**message, "content": blocks})
    for i, message in enumerate(out):
        if message["role"] == "assistant":
            _answer_tool_uses(out, i)
    if not out or out[-1]["role"] != "assistant":
        out.append({"role": "assistant", "content": [{"type": "text", "text": ending}]})
    return out


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    # Empty text blocks are refused by the API; a model that said nothing leaves them behind.
    return [b for b in content or [] if not (b.get("type") == "text" and not str(b.get("text", "")).strip())]


def _answer_tool_uses(out: list[dict[str, Any]], i: int) -> None:
    """Make message ``i + 1`` answer every tool_use of assistant message ``i``, and only those."""
    asked = [b["id"] for b in out[i]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    nxt = out[i + 1] if i + 1 < len(out) else None
    given = _blocks(nxt) if nxt is not None else []
    answered = {b.get("tool_use_id") for b in given if b.get("type") == "tool_result"}
    if not asked and not answered:
        return
    kept = [b for b in given if b.get("type") != "tool_result" or b.get("tool_use_id") in asked]
    missing = [
        {"type": "tool_result", "tool_use_id": id_, "content": NOT_RUN, "is_error": True}
        for id_ in asked
        if id_ not in answered
    ]
    if not missing and len(kept) == len(given):
        return
    results = [b for b in kept if b.get("type") == "tool_result"] + missing
    content = results + [b for b in kept if b.get("type") != "tool_result"]  # results come first
    if nxt is None:
        out.append({"role": "user", "content": content})
    else:
        out[i + 1] = {**nxt, "content": content or [{"type": "text", "text": "(No tool results.)"}]}
