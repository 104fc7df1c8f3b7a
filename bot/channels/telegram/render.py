"""The model's Markdown as Telegram messages: plain text plus entities, split to fit.

Rendering is done by ``telegramify-markdown`` (Markdown → text and ``MessageEntity`` offsets in
UTF-16 units, the way Telegram counts). Entities instead of MarkdownV2 mean no escaping to get
wrong, and the 4096 limit is measured on what Telegram actually receives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import telegramify_markdown

LIMIT = 4096


@dataclass
class Chunk:
    """One message to send: text and its entities (offsets relative to this chunk)."""

    text: str
    entities: list[dict[str, Any]] = field(default_factory=list)


def utf16_len(text: str) -> int:
    """Length as Telegram measures it."""
    return len(text.encode("utf-16-le")) // 2


def render(markdown: str, limit: int = LIMIT) -> list[Chunk]:
    """Chunks of at most ``limit`` UTF-16 units; a split never falls inside a code block that fits
    in one message, and prefers paragraph, then line, then word boundaries."""
    text, entities = telegramify_markdown.convert(markdown)
    spans = [e.to_dict() for e in entities]
    if not text.strip():
        return [Chunk(markdown.strip() or "…")]
    units = _Units(text)
    chunks: list[Chunk] = []
    start = 0
    while start < units.total:
        end = units.total if units.total - start <= limit else _cut(units, spans, start, start + limit)
        piece = units.slice(start, end)
        if piece.strip():
            chunks.append(Chunk(piece, _clip(spans, start, end)))
        start = end
    return chunks


class _Units:
    """A text indexed by UTF-16 offsets."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-16-le")
        self.total = len(self.data) // 2

    def slice(self, start: int, end: int) -> str:
        return self.data[start * 2 : end * 2].decode("utf-16-le", errors="ignore")

    def find_last(self, needle: str, start: int, end: int) -> int:
        """The UTF-16 offset just after the last ``needle`` in [start, end), or -1."""
        window = self.slice(start, end)
        at = window.rfind(needle)
        return -1 if at < 0 else start + utf16_len(window[: at + len(needle)])


def _cut(units: _Units, spans: list[dict[str, Any]], start: int, hard_end: int) -> int:
    blocks = [(s["offset"], s["offset"] + s["length"]) for s in spans if s["type"] == "pre"]
    # Never cut inside a code block that could fit in a message of its own: end before it.
    for begin, finish in blocks:
        if begin < hard_end < finish and finish - begin <= hard_end - start and begin > start:
            hard_end = begin
    for separator in ("\n\n", "\n", " "):
        at = units.find_last(separator, start, hard_end)
        if at > start and not any(b < at < f and f - b <= LIMIT for b, f in blocks):
            return at
    return hard_end if not _splits_surrogate(units, hard_end) else hard_end - 1


def _splits_surrogate(units: _Units, at: int) -> bool:
    code = int.from_bytes(units.data[at * 2 - 2 : at * 2], "little") if at > 0 else 0
    return 0xD800 <= code <= 0xDBFF


def _clip(spans: list[dict[str, Any]], start: int, end: int) -> list[dict[str, Any]]:
    clipped = []
    for span in spans:
        begin, finish = max(span["offset"], start), min(span["offset"] + span["length"], end)
        if begin < finish:
            clipped.append({**span, "offset": begin - start, "length": finish - begin})
    return clipped
