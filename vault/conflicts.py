"""What sync tools leave behind when two devices changed one note: a conflict copy beside it, or
conflict markers inside it.

- Syncthing: ``Note.sync-conflict-20261123-140501-ABCDEFG.md`` (date, time, the device's short id).
- Obsidian Sync (conflict resolution "Create conflict file"), Dropbox and others:
  ``Note (Conflicted copy Pixel 202611231405).md``, ``Note (conflicted copy 2026-11-23).md``.
- git: ``<<<<<<<``, ``=======`` and ``>>>>>>>`` lines in the note itself.

A conflict copy is not a note of its own: the index passes over it (searching would otherwise find
every sentence twice), and the person is told of it to merge by hand.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Conflict", "find_conflicts", "has_conflict_markers", "is_conflict_copy"]

_SYNCTHING = re.compile(r"\.sync-conflict-\d{8}-\d{6}(?:-[A-Z0-9]{7})?(?:\.|$)")
_CONFLICTED_COPY = re.compile(r"\((?:[^()]*\s)?conflicted copy\b[^()]*\)", re.IGNORECASE)
_MARKERS = re.compile(r"^<{7}(?: .*)?\n(?:.*\n)*?={7}\n(?:.*\n)*?>{7}(?: .*)?$", re.MULTILINE)
_SCANNED = (".md", ".markdown", ".txt")


@dataclass(frozen=True)
class Conflict:
    """A conflict a sync tool left: ``path`` (vault-relative) and what it is."""

    path: str
    kind: str  # "copy" (a conflict copy beside a note) or "markers" (git's, inside the note)

    def describe(self) -> str:
        """One phrase for a person."""
        if self.kind == "markers":
            return f"{self.path} has git conflict markers in it"
        return f"{self.path} is a sync tool's conflict copy"


def is_conflict_copy(name: str) -> bool:
    """Whether the file ``name`` is a conflict copy a sync tool made."""
    return bool(_SYNCTHING.search(name) or _CONFLICTED_COPY.search(name))


def has_conflict_markers(text: str) -> bool:
    """Whether ``text`` holds a whole git conflict (``<<<<<<<`` … ``=======`` … ``>>>>>>>``)."""
    return "<<<<<<<" in text and bool(_MARKERS.search(text))


def find_conflicts(root: Path, *, markers: bool = True) -> list[Conflict]:
    """Every conflict copy and (with ``markers``: each note is read) every note with conflict markers
    in the vault at ``root``, hidden folders left out. Blocking: call it in a thread."""
    found: list[Conflict] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if is_conflict_copy(name):
                found.append(Conflict(rel, "copy"))
            elif markers and name.lower().endswith(_SCANNED) and _has_markers(path):
                found.append(Conflict(rel, "markers"))
    return found


def _has_markers(path: Path) -> bool:
    try:
        return has_conflict_markers(path.read_bytes().decode("utf-8", errors="replace"))
    except OSError:
        return False
