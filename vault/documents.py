"""The text of documents kept in the vault (PDF, plain text, CSV, JSON), for the model and the index.

Documents are read in a process of their own, within limits of time and memory
(:mod:`vault.document_reader`); this module says what came of it. At most ``max_chars`` characters are
taken, page by page, so a 1,000-page PDF costs the pages read, not the whole file. A document whose text
cannot be read says why (``status``) instead of raising: an encrypted PDF, one with no text layer (a
scan), a file that is not what its name says, one the limits stopped before any text. One read in
part says what was left out and why (:attr:`DocumentText.limits`).
"""

from __future__ import annotations

from dataclasses import dataclass

# Markdown files are notes (indexed as notes); these are indexed as documents.
DOCUMENT_SUFFIXES = frozenset({".pdf", ".txt", ".csv", ".json"})
# Text taken into the search index per document (and so what ``vault_read`` of it returns, at most).
INDEX_CHARS = 200_000

STATUSES = ("ok", "encrypted", "no_text", "corrupt", "empty", "limited")


@dataclass(frozen=True)
class DocumentText:
    """What could be read of a document. ``text`` carries ``--- Page N ---`` markers for a PDF;
    ``pages`` is the document's page count (1 for a text file) and ``pages_read`` how many of them
    ``text`` covers; ``truncated`` says text was left out to stay within the limit of characters.

    The limits of time and memory leave out pages too: ``skipped`` pairs each page that was not read
    with why (its marker in ``text`` says so where it stands), and ``stopped`` says why reading ended
    after page ``pages_read`` (None when it did not)."""

    status: str
    text: str = ""
    pages: int = 0
    pages_read: int = 0
    truncated: bool = False
    skipped: tuple[tuple[int, str], ...] = ()
    stopped: str | None = None

    @property
    def problem(self) -> str | None:
        """Why there is no text, in words a person understands (None when there is text)."""
        if self.status == "limited":
            if self.stopped is not None and not self.skipped and self.pages_read == 0:
                return self.stopped  # nothing was tried but the one thing that failed: say just that
            return f"nothing in it could be read within vaultbot's limits ({self.limits})"
        return {
            "ok": None,
            "encrypted": "it is encrypted (password-protected), so its text cannot be read",
            "no_text": "it has no text layer (a scan or a picture of text), so there is no text to read",
            "corrupt": "it is damaged or not the kind of file its name says",
            "empty": "it is empty",
        }[self.status]

    @property
    def limits(self) -> str | None:
        """What the limits of time and memory left out, and why, in words a person understands; None
        when they left out nothing (``truncated`` text is another matter: it is there to be read)."""
        parts = []
        reasons: dict[str, list[int]] = {}
        for number, why in self.skipped:
            reasons.setdefault(why, []).append(number)
        for why, numbers in reasons.items():
            parts.append(f"{_span(numbers)} {'was' if len(numbers) == 1 else 'were'} skipped: {why}")
        if self.stopped is not None:
            rest = list(range(self.pages_read + 1, self.pages + 1))
            if rest:
                were = "was" if len(rest) == 1 else "were"
                parts.append(f"{_span(rest)} (of {self.pages}) {were} not read: {self.stopped}")
            else:
                parts.append(f"the rest was not read: {self.stopped}")
        return "; ".join(parts) or None


def is_document(path: str) -> bool:
    """Whether the vault-relative ``path`` names a document whose text vaultbot reads."""
    dot = path.rfind(".")
    return dot > path.rfind("/") and path[dot:].lower() in DOCUMENT_SUFFIXES


def page_marker(number: int) -> str:
    """The line that starts page ``number`` (1-based) of a PDF's text."""
    return f"--- Page {number} ---"


def _span(numbers: list[int]) -> str:
    """``[3, 4, 5, 9]`` as "pages 3–5 and 9", ``[2]`` as "page 2"."""
    runs: list[list[int]] = []
    for number in sorted(numbers):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    words = [f"{run[0]}" if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs]
    listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return f"page {listed}" if len(numbers) == 1 else f"pages {listed}"
