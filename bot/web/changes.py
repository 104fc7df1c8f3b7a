"""The run page's account of what a run changed in the vault: each change as a diff of lines, the note
linked to Obsidian, and the command that undoes the run (shown, never run: the page only reads)."""

from __future__ import annotations

import re
from typing import Any

from bot.store import short_id
from bot.web.notes import obsidian_link
from bot.web.sources import ReviewSources
from vault import Change
from vault.changes import line_diff

__all__ = ["run_changes"]

# What the run did to each file, as the heading of its diff says it.
_VERBS = {
    "created": "created",
    "appended": "added to",
    "replaced": "replaced",
    "reverted": "put back its earlier text",
    "trashed": "moved to .trash",
    "restored": "put back from .trash",
    "attachment": "saved",
}
_SIGNS = {"+": ("+", "add"), "-": ("−", "del"), " ": (" ", "same"), "@": ("⋯", "gap")}
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


async def run_changes(review: ReviewSources, run: dict[str, Any]) -> dict[str, Any]:
    """The changes section of ``run``'s page: its changes, who undid it or whom it undid, and the commands."""
    found = await review.reader.change_set(run["id"])
    root = review.settings.vault.path
    shown = short_id(run["id"])
    return {
        "items": [_item(change, root) for change in found["changes"]],
        "undone_by": found["undone_by"],
        "undid": found["undid"],
        "commands": [f"vaultbot undo {shown}", f"/undo {shown}"],
    }


def _item(change: Change, root: Any) -> dict[str, Any]:
    note = change.path.lower().endswith(".md") and change.kind != "trashed"
    return {
        "path": change.path,
        "kind": change.kind,
        "verb": _VERBS[change.kind],
        "kept": change.kept,
        "obsidian": obsidian_link(root, change.path) if note else None,
        "lines": [_line(line) for line in diff_lines(change)],
        "size": change.detail.get("bytes"),
        # Written by a run holding someone else's words: their first sources (bot.consent.provenance).
        "sources": change.detail.get("sources") or [],
    }


def _line(line: str) -> dict[str, str]:
    sign, cls = _SIGNS[line[:1] or " "]
    if sign == "⋯":
        hunk = _HUNK.match(line)
        return {"sign": sign, "cls": cls, "text": f"from line {hunk.group(1)}" if hunk else line.lstrip("@ ")}
    return {"sign": sign, "cls": cls, "text": line[1:]}


def diff_lines(change: Change) -> list[str]:
    """The change as unified-diff lines (each starting with ``+``, ``-``, `` `` or ``@``)."""
    detail = change.detail
    if "diff" in detail:
        return list(detail["diff"])
    if "lines" in detail:
        return [f"@ {detail['lines']} lines: too long to show here"]
    text = detail.get("text")
    if isinstance(text, str):
        sign = "-" if change.kind == "trashed" else "+"
        return [sign + line for line in text.splitlines()]
    if "after_tail" in detail:
        head = line_diff(detail["before_head"], detail["after_head"], context=1)
        added = [f"+{line}" for line in detail["after_tail"].strip("\n").splitlines()]
        gone = [f"-{line}" for line in detail["before_tail"].strip("\n").splitlines()]
        middle = ["@ the rest of the note, unchanged"] if head else []
        return [*head, *middle, *gone, *added]
    return []
