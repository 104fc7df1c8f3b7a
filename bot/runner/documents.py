"""Documents that come with messages become text the model reads.

The channel has already stored the file in the vault, so nothing here can lose it. Before the model
sees the message, :meth:`Documents.prepare` has the vault read the document's text (in a process of
its own, within limits of time and memory, from a worker thread; the vault puts the text in its search
index, so ``vault_search`` finds the document and ``vault_read`` of its path returns the text) and adds
it to the message: page markers kept, at most ``max_chars`` characters, and a line saying what was
left out. A document whose text cannot be read (encrypted, a scan, damaged) is said to be so, to the
model and, once, to the user; so is one the limits let be read only in part, and what they left out.
No note is written: that is the model's to decide.
"""

from __future__ import annotations

import asyncio
import logging
import time

from bot.bus import Bus, InboundMessage
from bot.consent import Untrusted, label
from bot.store import Store
from bot.tools import ToolContext, queue_notice
from vault import DocumentText, Vault, page_marker

log = logging.getLogger(__name__)

# About 6,000 tokens: enough for a letter, a contract's first pages or a short paper, while a long
# document stays in the conversation's history at a bounded cost (the rest is a vault_read away).
MAX_CHARS = 24_000


class Documents:
    """Gives the model the text of the documents that come with messages."""

    def __init__(self, *, notes: Vault, bus: Bus, store: Store, max_chars: int = MAX_CHARS) -> None:
        self._notes = notes
        self._bus = bus
        self._store = store
        self._max_chars = max_chars

    async def prepare(self, message: InboundMessage, text: str, context: ToolContext) -> str:
        """``text`` (the message as the model will read it) with its document's text added.

        Idempotent: reading is repeatable, the audit step belongs to this run, and the notice to the
        user is keyed by the inbound message."""
        document = message.document
        if document is None:
            return text
        started = time.perf_counter()
        try:
            path, read = await asyncio.to_thread(self._notes.read_document, document.path)
        except OSError as exc:
            path, read = document.path, None
            log.warning("document %s could not be read from the vault: %s", document.path, exc)
        elapsed = (time.perf_counter() - started) * 1000
        problem = "its file could not be read from the vault" if read is None else read.problem
        await self._store.add_step(
            context.run_id,
            kind="event",
            name="document",
            input={"path": path},
            output={
                "status": read.status if read else "unreadable",
                "pages": read.pages if read else 0,
                "chars": len(read.text) if read else 0,
                "left_out": read.limits if read else None,
            },
            is_error=problem is not None,
            duration_ms=elapsed,
        )
        name = path.rsplit("/", 1)[-1]
        if read is None or problem is not None:
            await queue_notice(
                self._bus, context, f"I could not read {name}: {problem}. It is kept at {path}.", key="document"
            )
            words = f"(vaultbot could not read the text of the document {path}: {problem}. The file is kept.)"
        else:
            if read.limits is not None:
                told = f"I could read only part of {name}: {read.limits}. It is kept at {path}."
                await queue_notice(self._bus, context, told, key="document")
            words = self.as_read(path, read)
        return f"{text}\n{words}" if text else words

    def as_read(self, path: str, read: DocumentText) -> str:
        """The document's text as the model reads it: marked as the document's content, bounded, and
        saying what was left out."""
        pages = f", {read.pages} page{'s' if read.pages != 1 else ''}" if path.lower().endswith(".pdf") else ""
        head = f"[Text of the document {path}{pages}, extracted by vaultbot:]"
        body, shown_pages = _bounded(read, self._max_chars)
        left_out = _left_out(path, read, body, shown_pages)
        # The document's words are someone else's: in their label, between vaultbot's own lines.
        return "\n".join(part for part in (head, label(Untrusted(body, "document")), left_out) if part)


def _bounded(read: DocumentText, limit: int) -> tuple[str, int]:
    """At most ``limit`` characters of the text, cut at a line end, and the last page they reach."""
    text = read.text
    if len(text) > limit:
        cut = text.rfind("\n", 0, limit)
        text = text[: cut if cut > limit // 2 else limit]
    shown = read.pages_read
    if read.pages > 1:
        shown = max((n for n in range(1, read.pages_read + 1) if page_marker(n) in text), default=0)
    return text.rstrip(), shown


def _left_out(path: str, read: DocumentText, shown: str, shown_pages: int) -> str:
    parts = []
    if len(shown) < len(read.text.rstrip()) or read.truncated:
        where = "the rest of the file"
        if read.pages > 1:
            # Past the pages read before a limit stopped the reading, there is nothing more to read.
            end = read.pages_read if read.stopped is not None else read.pages
            where = f"the rest of page {shown_pages}"
            if shown_pages < end:
                where += f" and pages {shown_pages + 1}–{end} (of {read.pages})"
        parts.append(
            f"{where}, after the first {len(shown):,} characters. "
            f'vault_read "{path}" gives more of the text; vault_search finds words in it'
        )
    if read.limits is not None:
        parts.append(f"not read at all, within vaultbot's limits of time and memory: {read.limits}")
    return f"[Left out here: {'. And '.join(parts)}.]" if parts else ""
