"""The model's Markdown as Telegram messages: plain text plus entities, split to fit.

Rendering is done by ``telegramify-markdown`` (Markdown → text and ``MessageEntity`` offsets in
UTF-16 units, the way Telegram counts). Entities instead of MarkdownV2 mean no escaping to get
wrong, and the 4096 limit is measured on what Telegram actually receives.

Telegram has no raw HTML, and the converter drops what Markdown reads as HTML: ``/note <text>``
became ``/note``, and a line starting ``<div>`` took the lines after it along. So HTML is shown as
the text it is (:func:`literal_html`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyromark
import telegramify_markdown
from telegramify_markdown.converter import STANDARD_OPTIONS

LIMIT = 4096
# What CommonMark lets a backslash escape: every ASCII punctuation character.
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@dataclass
class Chunk:
    """One message to send: text and its entities (offsets relative to this chunk)."""

    text: str
    entities: list[dict[str, Any]] = field(default_factory=list)


def utf16_len(text: str) -> int:
    """Length as Telegram measures it."""
    return len(text.encode("utf-16-le")) // 2


def plain(text: str, limit: int = LIMIT) -> Chunk:
    """``text`` as it is, with no entities (nothing in it is read as Markdown), cut to one message of at
    most ``limit`` UTF-16 units: a question for consent, whose buttons belong under all of it."""
    if utf16_len(text) <= limit:
        return Chunk(text)
    kept = text[: limit - 1]
    while utf16_len(kept) > limit - 1:
        kept = kept[:-1]
    return Chunk(kept + "…")


def render(markdown: str, limit: int = LIMIT) -> list[Chunk]:
    """Chunks of at most ``limit`` UTF-16 units; a split never falls inside a code block that fits
    in one message, and prefers paragraph, then line, then word boundaries."""
    text, entities = telegramify_markdown.convert(literal_html(markdown))
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


def literal_html(markdown: str) -> str:
    """``markdown`` with what it would read as HTML (a tag inline, an HTML block) escaped, so it
    renders as the characters written. Parsed once with the converter's own options, so code spans
    and blocks, which show ``<`` as it is, are left alone."""
    if "<" not in markdown:  # no HTML without it: most replies skip the parse
        return markdown
    spans = [
        (where["start"], where["end"])
        for event, where in pyromark.events_with_range(markdown, options=STANDARD_OPTIONS)
        if isinstance(event, dict) and ("Html" in event or "InlineHtml" in event)
    ]
    if not spans:
        return markdown
    data = markdown.encode("utf-8")  # the parser's ranges are UTF-8 byte offsets
    parts: list[str] = []
    done = 0
    for start, end in sorted(spans):
        parts.append(data[done:start].decode("utf-8"))
        parts.append("".join(f"\\{c}" if c in _ESCAPABLE else c for c in data[start:end].decode("utf-8")))
        done = end
    parts.append(data[done:].decode("utf-8"))
    return "".join(parts)


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
