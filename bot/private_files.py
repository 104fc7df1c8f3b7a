"""vaultbot's own files are its owner's alone, whatever the umask: the store holds every
conversation and the review token, the log names who wrote.

Files vaultbot names and alone writes (the store and its ``-wal`` and ``-shm``, the log and its
rotated files) are created 0600, and one left readable by others (by an older version, a copy) is
tightened when it is next opened: only the group's and others' bits are taken away, so a store made
read-only stays read-only. A folder is created 0700 but never changed once it exists: it may be the
person's own (their home, a shared folder) and hold more than vaultbot's files, so ``vaultbot doctor``
names it and the ``chmod`` that makes it private instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "FILE_MODE",
    "FOLDER_MODE",
    "create_private_file",
    "make_private_folder",
    "open_private",
    "readable_by_others",
    "tighten",
]

log = logging.getLogger(__name__)

FILE_MODE = 0o600
FOLDER_MODE = 0o700
# The group's and everyone else's bits: none of them may be set on a private file or folder.
_OTHERS = 0o077


def make_private_folder(folder: Path) -> None:
    """Create ``folder`` (and its missing parents, with the usual mode) owner-only; leave an
    existing one as it is (blocking)."""
    if folder.is_dir():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):  # another process made it meanwhile
        folder.mkdir(mode=FOLDER_MODE)
        # mkdir's mode passes through the umask, which may take the owner's bits too.
        folder.chmod(FOLDER_MODE)


def open_private(path: str, flags: int) -> int:
    """An ``opener`` for :func:`open`: a file it creates is the owner's alone (a umask can only take
    bits away from 0600, never add them)."""
    return os.open(path, flags, FILE_MODE)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty and owner-only unless it exists; an existing one is :func:`tighten`-ed."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        tighten(path)


def tighten(path: Path) -> None:
    """Take the group's and others' permissions off the file ``path``, if it is one and has any;
    says so in the log. A file vaultbot may not change (someone else's) is left, with a warning."""
    try:
        info = path.stat()
    except OSError:
        return  # missing: nothing to keep private
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISREG(info.st_mode) or not mode & _OTHERS:
        return
    try:
        path.chmod(mode & ~_OTHERS)
    except OSError as exc:
        log.warning("%s is readable by other users (%04o) and cannot be made private: %s", path, mode, exc.strerror)
        return
    log.warning("%s was readable by other users (%04o); it is now its owner's only (%04o)", path, mode, mode & ~_OTHERS)


def readable_by_others(paths: Iterable[Path]) -> list[tuple[Path, int]]:
    """Each of ``paths`` that exists and gives the group or others any permission, with its mode."""
    found: list[tuple[Path, int]] = []
    for path in paths:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            continue
        if mode & _OTHERS:
            found.append((path, mode))
    return found
