"""Replace a note only if it still holds the bytes the new text was made from.

A sync tool (Syncthing, Obsidian Sync, iCloud) replaces notes without taking vaultbot's locks, so a
check before the rename leaves a moment in which its text would be renamed over, unseen. On Linux
the rename is an exchange instead (``renameat2(RENAME_EXCHANGE)``): the new text goes in and the
file it displaced comes out under the temporary name, where it is compared with what the new text
was based on. If another program had written meanwhile, its file is put back (nothing of it lost)
and the caller is given its bytes to build on. Where the system cannot exchange (another OS, a file
system without it), the check is made just before a plain rename, which narrows the moment to
microseconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import time
from pathlib import Path

from vault.files import staged

__all__ = ["swap_in"]

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
try:
    _renameat2 = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).renameat2
except (AttributeError, OSError, TypeError):  # not glibc 2.28+ or not Linux
    _renameat2 = None
_exchanges = [_renameat2 is not None]  # turned off the first time the file system refuses


def swap_in(path: Path, data: bytes, based_on: bytes, *, mode: int | None = None) -> bytes | None:
    """Put ``data`` at ``path`` (with ``mode``, as :func:`vault.files.staged` takes it) if ``path`` still
    holds ``based_on``; returns None when it did, else the bytes ``path`` holds now (left in place,
    untouched). Raises ``FileNotFoundError`` when the note is gone. The caller holds the folder's lock,
    so vaultbot's own writers never race here."""
    with staged(path.parent, data, mode) as tmp:
        if _exchanges[0]:
            try:
                return _exchange_in(path, tmp, data, based_on)
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
                    raise
                _exchanges[0] = False
        now = path.read_bytes()
        if now != based_on:
            return now
        os.replace(tmp, path)
        return None


def _exchange_in(path: Path, tmp: Path, data: bytes, based_on: bytes) -> bytes | None:
    _exchange(tmp, path)
    displaced = tmp.read_bytes()
    if displaced == based_on:
        return None
    # Someone wrote since the read: put their file back. If they wrote again over ours meanwhile,
    # theirs is the newest and stays, and the one it superseded is theirs to have replaced.
    _exchange(tmp, path)
    back = tmp.read_bytes()
    if back != data:
        _exchange(tmp, path)
        # A third write came in while ours was in place and may have been built on ours, so the file
        # we displaced first (in ``tmp`` again) is kept beside the note, as a sync tool keeps a
        # conflict copy, rather than go with the temporary file.
        _keep_as_conflict_copy(tmp, path)
        return back
    return displaced


def _keep_as_conflict_copy(tmp: Path, path: Path) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        copy = path.with_name(f"{path.stem}.sync-conflict-{stamp}-VAULT{n:02d}{path.suffix}")
        try:
            os.link(tmp, copy)  # never over another copy
            return
        except FileExistsError:
            continue


def _exchange(a: Path, b: Path) -> None:
    assert _renameat2 is not None
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(b))
