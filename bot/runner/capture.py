"""Capture mode: with no API key, a fixed script stands in for the model.

It goes through the same loop, tools, outbox and audit trail as the real model, so a captured
message is as durable and as reviewable as an answered one, and the reply never says "saved"
unless ``vault_write`` said so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from bot.clock import unstamp
from bot.consent import unlabelled
from bot.runner.model import ModelReply, TextListener
from vault import daily_entry

TITLE_CHARS = 60
# A link in the text, without the punctuation a sentence puts after it.
_URL = re.compile(r"https?://[^\s<>\"]+?(?=[.,;:!?)\]}'\"]*(?:\s|$))", re.IGNORECASE)
_PATH_WORDS = re.compile(r"[/\-_.+~,;=]+")
# What ends a page's address without saying anything about it.
_PAGE_SUFFIXES = {"html", "htm", "php", "asp", "aspx", "jsp", "cgi", "index"}
ENABLE_HINT = "Capture mode is on: set ANTHROPIC_API_KEY to turn on the assistant (see the README)."


@dataclass(frozen=True)
class Filed:
    """What a capture's write did: ``path`` when the note was saved (``unchanged`` when it was there
    already), else ``error``, why it was not."""

    path: str | None
    error: str | None
    unchanged: bool = False


class CaptureModel:
    """A :class:`~bot.runner.model.ModelClient` that files each message as a note in the inbox, or,
    with ``daily`` set to a (folder, strftime pattern), as a timestamped line in the day's note
    (the day and time of ``now``, the user's clock). ``hint`` follows the reply, if any. With ``log``
    it records the outcome in the interaction log once the write's result is known: "Captured …" only
    when the note was saved, else an ``error`` entry with the reason."""

    name = "capture"

    def __init__(
        self,
        inbox: str,
        *,
        daily: tuple[str, str] | None = None,
        now: Callable[[], datetime] | None = None,
        hint: str | None = ENABLE_HINT,
        log: bool = True,
    ) -> None:
        self._inbox = inbox
        self._daily = daily
        self._now = now
        self._hint = hint
        self._log = log

    async def complete(
        self,
        *,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        listener: TextListener | None = None,
    ) -> ModelReply:
        """First call: write the note (a message that is only a link: clip it, when ``clip_link`` is
        among ``tools``; if that fails, write the note). Then: log what became of it (with ``log``).
        Last: say where it went (at once: there is nothing to stream, so ``listener`` is not told)."""
        last = messages[-1]["content"]
        if isinstance(last, str):
            # The note holds what the user wrote, not the time stamp the runner put before it.
            text = unstamp(last)
            link = only_link(text)
            if link is not None and any(tool["name"] == "clip_link" for tool in tools):
                return _calls((_CLIP, "clip_link", {"url": link}))
            return _calls((_WRITE, "vault_write", self._write(text)))
        answered = {b.get("tool_use_id") for b in last if isinstance(b, dict)}
        if _CLIP in answered:
            clipped = _result(last, _CLIP)
            if not clipped.get("success"):
                return _calls((_WRITE, "vault_write", self._write(_user_text(messages))))
            if self._log:
                entry = {"summary": f"Clipped to {clipped['path']}: {clipped['title']}", "category": "capture"}
                return _calls(("capture_log", "log_interaction", entry))
        if self._log and _WRITE in answered:
            write = next(b["input"] for b in messages[-2]["content"] if b.get("id") == _WRITE)
            entry = _log_entry(write, filed(messages), _user_text(messages), _clip_error(messages))
            return _calls(("capture_log", "log_interaction", entry))
        outcome = filed(messages)
        return ModelReply(
            content=[{"type": "text", "text": _outcome(outcome, self._hint, _clip_error(messages))}],
            stop_reason="end_turn",
            model=self.name,
        )

    def _write(self, text: str) -> dict[str, Any]:
        if self._daily is not None and text.strip():
            folder, pattern = self._daily
            day, line = daily_entry(text, pattern=pattern, when=self._now() if self._now else None)
            return {"folder": folder, "title": day, "content": line, "tags": ["daily"], "mode": "append"}
        return {"folder": self._inbox, "title": title_from(text), "content": text, "tags": ["inbox"]}


_WRITE = "capture_write"
_CLIP = "capture_clip"


def _calls(*calls: tuple[str, str, dict[str, Any]]) -> ModelReply:
    blocks = [{"type": "tool_use", "id": id_, "name": name, "input": input} for id_, name, input in calls]
    return ModelReply(content=blocks, stop_reason="tool_use", model=CaptureModel.name)


def _text(message: dict[str, Any]) -> str:
    """A user message's text, as a string or (once marked for the prompt cache) as text blocks."""
    content = message["content"]
    if isinstance(content, str):
        return unstamp(content)
    return unstamp("".join(b.get("text", "") for b in content if b.get("type") == "text"))


def _this_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of the turn being answered: from its user message (the last user message that
    is not tool results) on. The script's calls have the same ids in every turn, so a result is read
    from this turn only, never from one earlier in the conversation."""
    for at in range(len(messages) - 1, -1, -1):
        content = messages[at]["content"]
        if messages[at]["role"] == "user" and (
            isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content)
        ):
            return messages[at:]
    return messages


def _user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the turn's user message."""
    return _text(_this_turn(messages)[0]) if messages else ""


def _result(content: list[dict[str, Any]], tool_use_id: str) -> dict[str, Any]:
    block = next(b for b in content if b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id)
    return _read(block)


def _clip_error(messages: list[dict[str, Any]]) -> str | None:
    """Why the turn's link could not be clipped, when it was tried and failed."""
    for message in _this_turn(messages):
        content = message["content"]
        if message["role"] == "user" and not isinstance(content, str):
            for block in content:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == _CLIP:
                    result = _read(block)
                    return None if result.get("success") else str(result.get("error"))
    return None


def _log_entry(write: dict[str, Any], outcome: Filed, text: str, clip_error: str | None = None) -> dict[str, Any]:
    where = f"the daily note {write['title']}" if write.get("mode") == "append" else "the inbox"
    title = title_from(text)
    not_clipped = f" (the link could not be clipped: {clip_error})" if clip_error else ""
    if outcome.error is not None:
        return {"summary": f"Could not capture to {where}: {title} ({outcome.error}){not_clipped}", "category": "error"}
    return {"summary": f"Captured to {where}: {title}{not_clipped}", "category": "capture"}


def filed(messages: list[dict[str, Any]]) -> Filed:
    """What the capture's write did, read from the turn's messages (its tool result): the note written,
    else the link clipped."""
    turn = _this_turn(messages)
    written = _filed(turn, _WRITE)
    if written.path is None and _filed(turn, _CLIP).path is not None:
        return _filed(turn, _CLIP)
    return written


def only_link(text: str) -> str | None:
    """The link, when ``text`` is a link and nothing else."""
    found = _URL.fullmatch(text.strip())
    return found.group() if found else None


def _filed(messages: list[dict[str, Any]], tool_use_id: str) -> Filed:
    for message in reversed(messages):
        content = message.get("content")
        if isinstance(content, str):
            continue
        for block in content:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                result = _read(block)
                if not result.get("success"):
                    return Filed(None, str(result.get("error") or "the note could not be written"))
                return Filed(result["path"], None, bool(result.get("unchanged")))
    return Filed(None, "the note was not written")


def _read(block: dict[str, Any]) -> dict[str, Any]:
    """A tool's result, from its tool_result block (a clipped page's comes labelled as the page's words)."""
    return dict(json.loads(unlabelled(block["content"])))


def title_from(text: str) -> str:
    """A note title from a message: its first line of the person's own words (the channel's bracketed
    context lines, such as where a photo was saved, only when there is nothing else), cut at a word
    boundary. A link in it reads as its host and the words of its path (``example.com article`` for
    ``https://example.com/article?x=1``): a file name made of the raw address is unreadable."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    own = [line for line in lines if not _is_context(line)]
    first = _URL.sub(lambda link: _link_words(link.group()), next(iter(own or lines), "Untitled")).strip()
    first = first or "Untitled"
    if len(first) <= TITLE_CHARS:
        return first
    cut = first[:TITLE_CHARS].rsplit(" ", 1)[0] or first[:TITLE_CHARS]
    return cut.rstrip(" ,.;:") + "…"


def _link_words(url: str) -> str:
    """``https://www.example.com/blog/my-post.html?x=1`` → ``example.com blog my post``."""
    parts = urlsplit(url)
    host = (parts.hostname or "").removeprefix("www.")
    words = [word for word in _PATH_WORDS.split(unquote(parts.path)) if word]
    while words and words[-1].lower() in _PAGE_SUFFIXES:
        words.pop()
    return " ".join([host, *words]) if host else url


def _is_context(line: str) -> bool:
    """A line the channel or the runner added around the message: ``[…]`` or ``(…)``."""
    return (line[0], line[-1]) in (("[", "]"), ("(", ")"))


def _outcome(outcome: Filed, hint: str | None, clip_error: str | None = None) -> str:
    """The reply: where the message went, why its link was filed as it came when it could not be
    clipped, and the ``hint``."""
    if outcome.path is None:
        return f"I could not save that: {outcome.error}"
    verb = "Already saved as" if outcome.unchanged else "Saved to"
    not_clipped = ""
    if clip_error:
        not_clipped = f" The link could not be clipped: {clip_error.rstrip('.')}; it is kept as you sent it."
    saved = f"{verb} {outcome.path} in your vault.{not_clipped}"
    return f"{saved}\n{hint}" if hint else saved
