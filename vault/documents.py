"""The text of documents kept in the vault (PDF, plain text, CSV, JSON), for the model and the index.

Extraction is local and bounded: at most ``max_chars`` characters are taken, page by page, so a
1,000-page PDF costs the pages read, not the whole file. A document whose text cannot be read says
why (``status``) instead of raising: an encrypted PDF, one with no text layer (a scan), a file that
is not what its name says.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError, PdfReadError, PyPdfError

# Markdown files are notes (indexed as notes); these are indexed as documents.
DOCUMENT_SUFFIXES = frozenset({".pdf", ".txt", ".csv", ".json"})
# Text taken into the search index per document (and so what ``vault_read`` of it returns, at most).
INDEX_CHARS = 200_000

STATUSES = ("ok", "encrypted", "no_text", "corrupt", "empty")


@dataclass(frozen=True)
class DocumentText:
    """What could be read of a document. ``text`` carries ``--- Page N ---`` markers for a PDF;
    ``pages`` is the document's page count (1 for a text file) and ``pages_read`` how many of them
    ``text`` covers; ``truncated`` says text was left out to stay within the limit."""

    status: str
    text: str = ""
    pages: int = 0
    pages_read: int = 0
    truncated: bool = False

    @property
    def problem(self) -> str | None:
        """Why there is no text, in words a person understands (None when there is text)."""
        return {
            "ok": None,
            "encrypted": "it is encrypted (password-protected), so its text cannot be read",
            "no_text": "it has no text layer (a scan or a picture of text), so there is no text to read",
            "corrupt": "it is damaged or not the kind of file its name says",
            "empty": "it is empty",
        }[self.status]


def is_document(path: str) -> bool:
    """Whether the vault-relative ``path`` names a document whose text vaultbot reads."""
    dot = path.rfind(".")
    return dot > path.rfind("/") and path[dot:].lower() in DOCUMENT_SUFFIXES


def page_marker(number: int) -> str:
    """The line that starts page ``number`` (1-based) of a PDF's text."""
    return f"--- Page {number} ---"


def extract(data: bytes, name: str, *, max_chars: int = INDEX_CHARS) -> DocumentText:
    """The text of the document ``data`` called ``name`` (its suffix decides how it is read)."""
    if not data.strip():
        return DocumentText("empty")
    if name.lower().endswith(".pdf"):
        return _pdf(data, max_chars)
    text = _decode(data)
    if len(text) > max_chars:
        return DocumentText("ok", text[:max_chars], pages=1, pages_read=1, truncated=True)
    return DocumentText("ok", text, pages=1, pages_read=1)


def _decode(data: bytes) -> str:
    # Text files come from phones and every kind of PC: UTF-8 (with or without a BOM), else Windows' code page.
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _pdf(data: bytes, max_chars: int) -> DocumentText:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _opens_without_password(reader):
            return DocumentText("encrypted", pages=_count(reader))
        return _pages(reader, max_chars)
    except FileNotDecryptedError:
        return DocumentText("encrypted")
    # pypdf raises many kinds of error on a damaged file; each means the same thing to a person.
    except (PyPdfError, ValueError, TypeError, KeyError, AttributeError, IndexError, OSError, RecursionError):
        return DocumentText("corrupt")


def _opens_without_password(reader: PdfReader) -> bool:
    # Many "encrypted" PDFs only restrict printing or copying: they open with an empty user password.
    try:
        return bool(reader.decrypt(""))
    except (PyPdfError, NotImplementedError):
        return False


def _count(reader: PdfReader) -> int:
    try:
        return len(reader.pages)
    except (PdfReadError, FileNotDecryptedError):
        return 0


def _pages(reader: PdfReader, max_chars: int) -> DocumentText:
    total = len(reader.pages)
    parts: list[str] = []
    size = 0
    read = 0
    found_text = False
    for number, page in enumerate(reader.pages, start=1):
        if size >= max_chars:
            break
        words = (page.extract_text() or "").strip()
        found_text = found_text or bool(words)
        block = f"{page_marker(number)}\n{words}"
        parts.append(block[: max_chars - size])
        size += len(block) + 2
        read = number
    if not found_text:
        return DocumentText("no_text", pages=total, pages_read=read)
    text = "\n\n".join(parts)
    return DocumentText("ok", text, pages=total, pages_read=read, truncated=read < total or size > max_chars)
