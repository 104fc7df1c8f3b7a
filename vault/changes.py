"""What a write changed in the vault, recorded so that it can be shown and taken back.

A :class:`Change` names one file and what it was before and after, as SHA-256 digests of its bytes
(None: no file there). Where the other side's bytes live depends on its kind:

- ``created``, ``restored``, ``attachment``: there was nothing; taking it back moves the file to
  ``.trash/``. ``detail["text"]`` is the text written, to show and to tell later edits by.
- ``appended``: the note before and after share their body; ``detail`` holds what differs at each
  end (the front matter at the head, the added text at the tail), so the earlier text is rebuilt
  exactly from the note as it is now, or, for a note that was not UTF-8, ``kept`` names a copy.
- ``replaced``, ``reverted`` (an undo putting earlier text back): ``kept`` is the copy of the text
  before, under ``.vaultbot/versions/``; ``detail["diff"]`` shows what changed.
- ``trashed``: an undo moved the file to ``kept`` under ``.trash/``.

Everything here is plain data: the bot stores it as JSON.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "Change", "digest", "line_diff", "rebuild", "splice", "text_detail"]

KINDS = ("created", "appended", "replaced", "reverted", "trashed", "restored", "attachment")
# The text kept with a change to show it: a clipped page may be long, and the diff of a long one helps no one.
MAX_TEXT = 64_000
MAX_DIFF_LINES = 400


@dataclass(frozen=True)
class Change:
    """One file a write created, appended to, replaced, moved to the trash or put back (see the module)."""

    kind: str
    path: str
    before: str | None
    after: str | None
    kept: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def digest(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex, as changes and the search index name contents."""
    return hashlib.sha256(data).hexdigest()


def text_detail(text: str) -> dict[str, Any]:
    """``{"text": text}``, or only its line count when it is too long to keep with the change."""
    if len(text) <= MAX_TEXT:
        return {"text": text}
    return {"lines": text.count("\n") + 1}


def splice(before: str, after: str, shared: str) -> dict[str, str]:
    """What differs between ``before`` and ``after`` around the ``shared`` text both contain: the
    head and tail of each. Exact whichever occurrence is taken (each side is cut where ``shared``
    is found in it); a later occurrence in ``before`` and the first in ``after`` keep the ends short."""
    b = before.rfind(shared) if shared else len(before)
    a = after.find(shared) if shared else len(after)
    if b < 0 or a < 0:
        b, a, shared = len(before), len(after), ""
    return {
        "before_head": before[:b],
        "before_tail": before[b + len(shared) :],
        "after_head": after[:a],
        "after_tail": after[a + len(shared) :],
    }


def rebuild(current: str, parts: dict[str, str], *, forward: bool = False) -> str | None:
    """The text on the other side of a :func:`splice`: the before text from ``current`` (the after
    text), or with ``forward`` the after text from the before text; None when ``current`` does not
    start and end as that side did."""
    have, want = ("before", "after") if forward else ("after", "before")
    head, tail = parts[f"{have}_head"], parts[f"{have}_tail"]
    if len(current) < len(head) + len(tail) or not current.startswith(head) or not current.endswith(tail):
        return None
    shared = current[len(head) : len(current) - len(tail)]
    return parts[f"{want}_head"] + shared + parts[f"{want}_tail"]


def line_diff(before: str, after: str, *, context: int = 2) -> list[str]:
    """The lines that differ, unified-diff style (``+``/``-``/`` `` and ``@@`` between hunks), at most
    :data:`MAX_DIFF_LINES` (a last line says how many more)."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=context))[2:]
    if len(lines) > MAX_DIFF_LINES:
        more = len(lines) - MAX_DIFF_LINES
        lines = [*lines[:MAX_DIFF_LINES], f"@@ {more} more lines of difference not shown"]
    return lines
