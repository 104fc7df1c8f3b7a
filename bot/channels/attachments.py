"""Files that came with a message, kept in the vault under ``Attachments/`` before the message is on the
bus (the vault keeps the same bytes once: a message stored again after a crash names the same file)."""

from __future__ import annotations

import asyncio

from vault import ATTACHMENTS, Vault, is_document

__all__ = ["readable_document", "save_attachment", "saved_line"]


async def save_attachment(notes: Vault, name: str, data: bytes) -> str:
    """Keep ``data`` as ``name`` under ``Attachments/``, off the event loop; its path in the vault."""
    return await asyncio.to_thread(notes.save_attachment, ATTACHMENTS, name, data)


def readable_document(path: str) -> bool:
    """Whether the runner gives the model the text of the saved file at ``path`` (a document, or Markdown)."""
    return is_document(path) or path.lower().endswith(".md")


def saved_line(what: str, path: str, note: str = "") -> str:
    """The line that tells the model where a file is kept: ``[Photo saved in the vault: ![[path]]]``."""
    return f"[{what} saved in the vault: ![[{path}]]{note}]"
