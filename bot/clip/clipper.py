"""Clipping a link into the vault: fetch, extract, convert, file, remember.

The note is filed in the clip folder under the page's title with Obsidian Web Clipper's front
matter (``title``, ``source``, ``author``, ``published``, ``created``, ``description``,
``tags: [clippings]``). A page whose title would name the profile note (``VAULTBOT_MEMORY__NOTE``, in
any folder, as ``vault_write`` is asked about it) is filed as "… (clipped page)": a clip never writes
the note read before every turn. The ``clips`` table remembers each URL's note, so the same URL clipped
again (a second message, a re-run after a crash) returns that note without fetching the page again;
if the note is gone from the vault, the page is clipped anew. Parsing, extracting and filing run in
a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from bot.clip.addresses import Resolver, resolve
from bot.clip.extract import Page, page_of
from bot.clip.fetch import Fetched, Fetcher, checked_url
from bot.db import Database, now_iso
from bot.settings import ClipSettings
from vault import Change, Vault
from vault.paths import note_stem

log = logging.getLogger(__name__)

EXCERPT_CHARS = 1500


@dataclass(frozen=True)
class Clipping:
    """A clipped page in the vault; ``left_out`` says what of a PDF the limits of reading left out."""

    path: str
    title: str
    excerpt: str
    words: int
    source: str
    # What filing it changed in the vault; None for a page clipped before (nothing changed now).
    change: Change | None = None
    left_out: str | None = None
    text: str = ""  # the page's words as filed now (empty for a page clipped before)


class Clipper:
    """Clips links into one vault. :meth:`close` it."""

    def __init__(
        self,
        *,
        notes: Vault,
        db: Database,
        settings: ClipSettings,
        resolver: Resolver = resolve,
        profile_note: str | None = None,
    ) -> None:
        self._notes = notes
        self._db = db
        self._folder = settings.folder
        name = None if profile_note is None else profile_note.rsplit("/", 1)[-1].removesuffix(".md")
        self._profile = None if name is None else note_stem(name).casefold()
        self._fetcher = Fetcher(
            allow_private=settings.allow_private,
            max_bytes=settings.max_bytes,
            timeout=settings.timeout,
            resolver=resolver,
        )

    async def close(self) -> None:
        """Close the fetcher's connections."""
        await self._fetcher.close()

    async def clip(self, url: str, folder: str | None = None) -> Clipping:
        """The note of ``url``: the one filed before, else a new one in ``folder`` (default the clip
        folder). Raises ``ClipError`` (the page) or ``VaultError`` (the note) saying why not."""
        source = str(checked_url(url))
        known = await self._known(source)
        if known is not None:
            return known
        started = time.perf_counter()
        fetched = await self._fetcher.fetch(source)
        fetched_at = time.perf_counter()
        clipping = await asyncio.to_thread(
            file_page, self._notes, fetched, source, folder or self._folder, profile=self._profile
        )
        await self._db.execute(
            "INSERT INTO clips (url, path, title, excerpt, words, created_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (url) DO UPDATE SET path = excluded.path, title = excluded.title, "
            "excerpt = excluded.excerpt, words = excluded.words, created_at = excluded.created_at",
            (source, clipping.path, clipping.title, clipping.excerpt, clipping.words, now_iso()),
        )
        log.info(
            "clip %s → %s: %d words, fetched %.0fms, filed %.0fms",
            source,
            clipping.path,
            clipping.words,
            (fetched_at - started) * 1000,
            (time.perf_counter() - fetched_at) * 1000,
        )
        return clipping

    async def _known(self, source: str) -> Clipping | None:
        row = await self._db.fetchone("SELECT path, title, excerpt, words FROM clips WHERE url = ?", (source,))
        if row is None:
            return None
        if not await asyncio.to_thread(lambda: self._notes.resolve(row["path"]).is_file()):
            return None  # deleted since: clipped anew
        return Clipping(row["path"], row["title"], row["excerpt"], row["words"], source)


def file_page(notes: Vault, fetched: Fetched, source: str, folder: str, *, profile: str | None = None) -> Clipping:
    """Parse, extract, convert and file a fetched page (blocking: run it in a thread). A PDF is read as
    the vault reads documents: in a process of its own, within its limits of time and memory. A title
    naming ``profile`` (the profile note's name, case folded) is filed under another."""
    pdf = notes.document_text(fetched.data, "page.pdf") if fetched.media_type == "application/pdf" else None
    page = page_of(fetched, pdf)
    title = page.title
    if profile is not None and note_stem(title).casefold() == profile:
        title = f"{title} (clipped page)"
    written = notes.write(
        folder,
        title,
        page.markdown,
        tags=["clippings"],
        source=source,
        front_matter=_web_clipper_fields(page),
    )
    words = len(page.markdown.split())
    left_out = pdf.limits if pdf is not None else None
    return Clipping(written.path, title, excerpt(page.markdown), words, source, written.change, left_out, page.markdown)


def _web_clipper_fields(page: Page) -> dict[str, object]:
    """Web Clipper's front matter beyond what the vault writes itself (title, source, created, tags)."""
    return {"author": page.authors, "published": page.published, "description": page.description}


def excerpt(markdown: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of ``markdown``, at most ``limit`` characters, cut at a word with "…"."""
    if len(markdown) <= limit:
        return markdown
    cut = markdown[: limit - 1]
    return (cut.rsplit(None, 1)[0] if " " in cut or "\n" in cut else cut).rstrip() + "…"
