"""The line a reply gains when the run wrote notes its reply does not name: a person asking the
assistant to keep something learns where it went, from what the vault recorded, never from the model."""

from __future__ import annotations

from pathlib import PurePosixPath

from bot.store import ChangeSet

# The changes that leave a note with words of this run in it (not an undo's, not a channel's attachment).
_WRITES = frozenset({"created", "appended", "replaced"})
# More than this many and the line names the first few, then how many more.
_NAMED = 3


def with_where(text: str, changes: ChangeSet) -> str:
    """``text`` with ``Saved to PATH.`` after it, naming each note the run wrote that ``text`` does not
    already name (as its path, with or without ``.md``, or as a ``[[link]]``); ``text`` alone if none."""
    written = dict.fromkeys(c.path for c in changes.changes if c.kind in _WRITES)
    unnamed = [path for path in written if not _named(path, text)]
    if not unnamed:
        return text
    names = unnamed if len(unnamed) <= _NAMED else [*unnamed[:_NAMED], f"{len(unnamed) - _NAMED} more"]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{text.rstrip()}\n\nSaved to {listed}."


def _named(path: str, text: str) -> bool:
    stem = PurePosixPath(path).stem
    return path.removesuffix(".md") in text or f"[[{stem}]]" in text or f"[[{stem}|" in text
