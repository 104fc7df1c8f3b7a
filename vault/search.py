"""Word search over notes by scanning them; good enough for a personal vault."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vault.notes import SearchHit

SNIPPET_CHARS = 160
# How much of the snippet comes before the first match, so the hit is shown in context.
_LEAD_CHARS = 50
_TITLE_WEIGHT = 3
_TAG_WEIGHT = 2


@dataclass
class Document:
    """What search needs to know about one note."""

    path: str
    title: str
    tags: list[str]
    body: str


def search(documents: Iterable[Document], query: str, limit: int) -> list[SearchHit]:
    """The notes holding every word of ``query`` (case-insensitive), best first.

    Title matches weigh most, then tags, then the body; ties go by path.
    """
    words = query.casefold().split()
    scored: list[tuple[int, Document]] = []
    for doc in documents:
        title, tags, body = doc.title.casefold(), " ".join(doc.tags).casefold(), doc.body.casefold()
        if not all(word in title or word in tags or word in body for word in words):
            continue
        score = sum(_TITLE_WEIGHT * title.count(w) + _TAG_WEIGHT * tags.count(w) + body.count(w) for w in words)
        scored.append((score, doc))
    scored.sort(key=lambda item: (-item[0], item[1].path))
    return [SearchHit(doc.path, doc.title, snippet(doc.body, words)) for _, doc in scored[:limit]]


def snippet(body: str, words: list[str]) -> str:
    """About ``SNIPPET_CHARS`` characters of ``body`` around the first word found, on one line."""
    text = " ".join(body.split())
    # lower(), not casefold(): positions must line up with the original text.
    folded = text.lower()
    found = [pos for pos in (folded.find(word) for word in words) if pos >= 0]
    start = max(0, min(found) - _LEAD_CHARS) if found else 0
    end = start + SNIPPET_CHARS
    piece = text[start:end].strip()
    if start > 0:
        piece = "…" + piece
    if end < len(text):
        piece += "…"
    return piece
