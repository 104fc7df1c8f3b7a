"""Capture mode: with no API key, a fixed script stands in for the model.

It goes through the same loop, tools, outbox and audit trail as the real model, so a captured
message is as durable and as reviewable as an answered one, and the reply never says "saved"
unless ``vault_write`` said so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from bot.clock import unstamp
from bot.runner.model import ModelReply, TextListener
from vault import daily_entry

TITLE_CHARS = 60
# A link in the text, without the punctuation a sentence puts after it.
_URL = re.compile(r"https?://[^\s<>\"]+?(?=[.,;:!?)\]}'\"]*(?:\s|$))", re.IGNORECASE)
_PATH_WORDS = re.compile(r"[/\-_.+~,;=]+")
# What ends a page's address without saying anything about it.
_PAGE_SUFFIXES = {"html", "htm", "php", "asp", "aspx", "jsp", "cgi", "index"}
ENABLE_HINT = "Capture mode is on: set ANTHROPIC_API_KEY to turn on the assistant (see the README)."


class CaptureModel:
    """A :class:`~bot.runner.model.ModelClient` that files each message as a note in the inbox, or,
    with ``daily`` set to a (folder, strftime pattern), as a timestamped line in the day's note
    (the day and time of ``now``, the user's clock). ``hint`` follows the reply, if any."""

    name = "capture"

    def __init__(
        self,
        inbox: str,
        *,
        daily: tuple[str, str] | None = None,
        now: Callable[[], datetime] | None = None,
        hint: str | None = ENABLE_HINT,
    ) -> None:
        self._inbox = inbox
        self._daily = daily
        self._now = now
        self._hint = hint

    async def complete(
        self,
        *,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        listener: TextListener | None = None,
    ) -> ModelReply:
        """First call: write the note and log it. Second call: say where it went (at once: there
        is nothing to stream, so ``listener`` is not told)."""
        last = messages[-1]["content"]
        if isinstance(last, str):
            # The note holds what the user wrote, not the time stamp the runner put before it.
            return ModelReply(content=self._file(unstamp(last)), stop_reason="tool_use", model=self.name)
        return ModelReply(
            content=[{"type": "text", "text": _outcome(last, self._hint)}], stop_reason="end_turn", model=self.name
        )

    def _file(self, text: str) -> list[dict[str, Any]]:
        title = title_from(text)
        write: dict[str, Any] = {"folder": self._inbox, "title": title, "content": text, "tags": ["inbox"]}
        summary = f"Captured to the inbox: {title}"
        if self._daily is not None and text.strip():
            folder, pattern = self._daily
            day, line = daily_entry(text, pattern=pattern, when=self._now() if self._now else None)
            write = {"folder": folder, "title": day, "content": line, "tags": ["daily"], "mode": "append"}
            summary = f"Captured to the daily note {day}: {title}"
        return [
            {"type": "tool_use", "id": "capture_write", "name": "vault_write", "input": write},
            {
                "type": "tool_use",
                "id": "capture_log",
                "name": "log_interaction",
                "input": {"summary": summary, "category": "capture"},
            },
        ]


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


def _outcome(tool_results: list[dict[str, Any]], hint: str | None) -> str:
    write = next(b for b in tool_results if b.get("tool_use_id") == "capture_write")
    result = json.loads(write["content"])
    if not result.get("success"):
        return f"I could not save that: {result.get('error')}"
    verb = "Already saved as" if result.get("unchanged") else "Saved to"
    saved = f"{verb} {result['path']} in your vault."
    return f"{saved}\n{hint}" if hint else saved
