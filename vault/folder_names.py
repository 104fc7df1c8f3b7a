"""Which names a folder holds, by case-folded form, without listing the folder on every write.

A create must not pick a name that differs from a taken one only in case ("Note.md" beside
"note.md" is one name on macOS and Windows), so it needs every name in the folder, and a listing
costs in proportion to the folder's size (an Inbox of thousands of notes) on every write. So each
folder's names are kept with the folder's identity and mtime as they were when listed: a stat, not
a listing, shows whether anything changed since (a note added, renamed or removed in Obsidian or by
a sync changes the folder's mtime), and vaultbot's own creates add their names as they go.

That relies on each change giving the folder a new mtime. Where timestamps are coarse (older
kernels, some network file systems) two changes within one tick share one, so an outside change
right after one of vaultbot's could go unseen. A folder whose mtime did not move when vaultbot
created a note in it shows exactly that; from then on every folder is listed on every write.
(As with a listing, another program's create in the microseconds between reading the names and
vaultbot's own create is not seen by that create; an outside create of the very name vaultbot
links makes it :meth:`FolderNames.forget` the folder.)
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["FolderNames", "names_by_casefold"]

# What identifies a folder's state: (device, inode, mtime in ns).
_Stamp = tuple[int, int, int]


def names_by_casefold(directory: Path) -> dict[str, str]:
    """The folder's entry names by their case-folded form (a listing of the folder)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return {name.casefold(): name for name in names}


class FolderNames:
    """The names of the folders one vault writes into. The caller holds a folder's lock around
    :meth:`taken` and :meth:`added`, which keeps one folder's writers in order."""

    def __init__(self) -> None:
        self._known: dict[Path, tuple[_Stamp, dict[str, str]]] = {}
        self._guard = threading.Lock()
        self._trusted = True  # False once this file system shows coarse timestamps

    def taken(self, directory: Path) -> dict[str, str]:
        """The names in ``directory`` now, by case-folded form; the caller must not change them."""
        # Stat before listing: a change in between shows as a newer mtime next time, never as none.
        stamp = _stamp(directory)
        with self._guard:
            known = self._known.get(directory)
        if self._trusted and known is not None and known[0] == stamp:
            return known[1]
        names = names_by_casefold(directory)
        if stamp is not None:
            with self._guard:
                self._known[directory] = (stamp, names)
        return names

    def added(self, directory: Path, name: str) -> None:
        """Record ``name``, just created in ``directory`` by this vault after :meth:`taken`."""
        stamp = _stamp(directory)
        with self._guard:
            known = self._known.pop(directory, None)
            if known is None or stamp is None:
                return
            if stamp == known[0]:  # the folder changed but its mtime did not: coarse timestamps
                self._trusted = False
                return
            known[1][name.casefold()] = name
            self._known[directory] = (stamp, known[1])

    def forget(self, directory: Path) -> None:
        """List ``directory`` again next time: something changed it that :meth:`added` did not record."""
        with self._guard:
            self._known.pop(directory, None)


def _stamp(directory: Path) -> _Stamp | None:
    try:
        stat = os.stat(directory)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_mtime_ns
