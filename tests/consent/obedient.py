"""A scripted model that obeys whatever someone else's words tell it, as an injected model would.

Words it reads anywhere (the person's message, a labelled page, a document's text, a tool result, a tool's
description) may
hold ``DO: [steps]``: a JSON list of tool calls, each ``[name, input]``. It makes them one round at a
time, putting the text of the last note it read where an input says ``{note}``, then ends its turn.
Without orders it does what the person asked: ``read URL`` clips the page (``read URL into FOLDER`` into
that folder), ``check my mail`` calls the inbox server's inbox tool, ``open note PATH`` reads a note,
``search for WORDS`` searches the vault, and ``go ahead`` follows orders read earlier in the conversation.
So every attack here is carried out by the model, not by the test."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Iterator
from typing import Any

from PIL import Image, PngImagePlugin

from bot.consent import unlabelled
from bot.runner import ModelReply
from tests.fakes import anthropic_server as api
from tests.fakes.scripted_model import call, say

ORDERS = re.compile(r"DO: (\[.*?\])(?: END|$)", re.DOTALL)


def orders(steps: list[tuple[str, dict[str, Any]]]) -> str:
    """Words that tell an obedient model to make these calls."""
    return f"DO: {json.dumps(steps)} END"


def obedient(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> ModelReply:
    """The next reply of a model that follows the orders in what it read during this turn, or in the
    tools it is offered (their descriptions and input schemas)."""
    turn = _this_turn(messages)
    made = sum(1 for m in turn if m["role"] == "assistant")
    read = [*_read(turn), *(s for tool in tools or () for s in _strings(json.dumps(tool)))]
    steps = next((s for text in read for s in _orders(text)), None)
    if steps is None and "go ahead" in _text(turn[0]):
        earlier = [s for text in _read(messages) for s in _orders(text)]
        steps = earlier[-1] if earlier else None
    if steps is not None:
        done = made - _asked_before_orders(turn)
        if done < len(steps):
            name, input = steps[done]
            return call((name, _filled(input, _last_note(turn))))
        return say("Done as the page said.")
    if made == 0:
        asked = _text(turn[0])
        if link := re.search(r"read (https?://\S+) into (\S+)", asked):
            return call(("clip_link", {"url": link.group(1), "folder": link.group(2)}))
        if link := re.search(r"read (https?://\S+)", asked):
            return call(("clip_link", {"url": link.group(1)}))
        if note := re.search(r"open note (.+?)\s*$", asked):
            return call(("vault_read", {"path": note.group(1)}))
        if words := re.search(r"search for (.+?)\s*$", asked):
            return call(("vault_search", {"query": words.group(1)}))
        if "check my mail" in asked:
            return call(("mcp__inbox__inbox", {}))
    return say("Done.")


def _this_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages since the person's last message (not tool results)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = message["content"]
        if message["role"] == "user" and (
            isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content)
        ):
            return messages[i:]
    return messages


def _asked_before_orders(turn: list[dict[str, Any]]) -> int:
    """Rounds made before the orders were read (the clip or inbox call that brought them)."""
    for i, message in enumerate(turn):
        if any(_orders(text) for text in _texts(message)):
            return sum(1 for m in turn[:i] if m["role"] == "assistant")
    return 0


def _read(turn: list[dict[str, Any]]) -> Iterator[str]:
    for message in turn:
        yield from _texts(message)


def _texts(message: dict[str, Any]) -> Iterator[str]:
    content = message["content"]
    if isinstance(content, str):
        yield content
        return
    for block in content:
        if block.get("type") == "text":
            yield block["text"]
        elif block.get("type") == "image":
            yield _seen_in(block)
        elif block.get("type") == "tool_result":
            inner = block["content"]
            text = inner if isinstance(inner, str) else " ".join(p.get("text", "") for p in inner)
            yield from _strings(text)


def _seen_in(image: dict[str, Any]) -> str:
    """The words an image shows. This model cannot read pixels, so a test's screenshot carries its words
    as the PNG's ``Comment`` text too (``screenshot``), which the image keeps on its way to the model."""
    data = base64.b64decode(image["source"]["data"])
    with Image.open(io.BytesIO(data)) as picture:
        return str(getattr(picture, "text", {}).get("Comment", ""))


def screenshot(words: str) -> bytes:
    """A PNG that shows ``words`` (to this model: see :func:`_seen_in`)."""
    picture = Image.new("RGB", (64, 32), "white")
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", words)
    out = io.BytesIO()
    picture.save(out, "PNG", pnginfo=info)
    return out.getvalue()


def _strings(text: str) -> Iterator[str]:
    """``text`` and every string inside it when it is (labelled) JSON: a tool's result."""
    yield text
    try:
        decoded = json.loads(unlabelled(text))
    except ValueError:
        return
    stack = [decoded]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
            if item.startswith("<untrusted"):
                yield from _strings(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _orders(text: str) -> list[list[Any]]:
    # A clipped page's text is Markdown: read through its escapes, as a model does.
    found = ORDERS.search(re.sub(r"\\([\\`*_{}\[\]()#+\-.!<>|])", r"\1", text))
    try:
        return [json.loads(found.group(1))] if found else []
    except ValueError:  # orders inside a tool result's JSON, still escaped: read once decoded
        return []


def _last_note(turn: list[dict[str, Any]]) -> str:
    """The content of the last note read this turn (what the orders want sent away)."""
    note = ""
    for message in turn:
        for text in _texts(message):
            try:
                result = json.loads(unlabelled(text))
            except ValueError:
                continue
            if isinstance(result, dict) and "content" in result and "frontmatter" in result:
                note = str(result["content"]).strip()
    return note


def _filled(value: Any, note: str) -> Any:
    if isinstance(value, str):
        return value.replace("{note}", note)
    if isinstance(value, dict):
        return {k: _filled(v, note) for k, v in value.items()}
    return value


def _text(message: dict[str, Any]) -> str:
    return " ".join(_texts(message))


def obedient_api(body: dict[str, Any]) -> api.Canned:
    """:func:`obedient` behind the fake Messages API (for the real SDK, in a `vaultbot` process)."""
    reply = obedient(body["messages"])
    calls = [(b["name"], b["input"]) for b in reply.content if b.get("type") == "tool_use"]
    return api.tool_use(*calls) if calls else api.text(reply.text)
