"""Durable file writes, cross-process locks, and the vault's own private files."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: only threads of this process are kept apart.
    fcntl = None  # type: ignore[assignment]

_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


def write_atomic(
    path: Path, data: bytes, *, exclusive: bool = False, sync: bool = True, mode: int | None = None
) -> None:
    """Replace ``path`` with ``data`` so readers see the old file or the new one, never half.

    With ``exclusive`` the file must not exist yet: it is linked into place, which fails with
    ``FileExistsError`` instead of overwriting a note that appeared meanwhile (Obsidian, a sync).
    Without ``sync`` the caller must :func:`sync_folder` the parent itself before relying
    on the new name surviving a crash (so it can do that after releasing a lock). ``mode``: the
    file's permissions (owner-only without it).
    """
    make_folders(path.parent)
    with staged(path.parent, data, mode) as tmp:
        if exclusive:
            os.link(tmp, path)
        else:
            os.replace(tmp, path)
    if sync:
        sync_folder(path.parent)


@contextlib.contextmanager
def staged(directory: Path, data: bytes, mode: int | None = None) -> Iterator[Path]:
    """A temporary file in ``directory`` holding ``data``, already on disk (fsynced); removed on exit.

    Renaming or linking it into place inside the block publishes ``data`` atomically; staging is
    the slow part of a write, so it can happen before a lock is taken. The name starts with a dot
    so Obsidian and listings ignore the file meanwhile. It is owner-only, or has ``mode``.
    """
    fd, tmp_name = tempfile.mkstemp(prefix=".vault-", suffix=".tmp", dir=directory)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            # Straight to the descriptor: a buffered file object would add three syscalls and a copy.
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
        yield Path(tmp_name)
    finally:
        # Gone already when it was renamed into place; a leftover hidden file is harmless, and
        # failing here would report a saved note as not saved.
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)


# The vault's bookkeeping (its index, locks, previous versions) is its owner's alone: the folder is
# 0700 and its files 0600, whatever the umask. The person's notes and folders keep their own modes.
PRIVATE_FILE_MODE = 0o600
PRIVATE_FOLDER_MODE = 0o700


def note_mode(root: Path, path: Path) -> int:
    """The permissions a note written at ``path`` gets: the ones it has, for a note that exists;
    else the vault folder ``root``'s own, without execute (a vault others read, as a sync run by
    another user does, gets notes they can read; a private one, private notes)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return root.stat().st_mode & 0o666


def keep_private(folder: Path) -> None:
    """Keep ``folder`` its owner's only: create it so, or take the group's and others' permissions off
    it if it exists. Only for the vault's own bookkeeping, never for a folder of the person's."""
    folder.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
    mode = folder.stat().st_mode & 0o777
    if mode & ~PRIVATE_FOLDER_MODE:
        folder.chmod(mode & PRIVATE_FOLDER_MODE)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty and owner-only unless it exists (a database file, before SQLite opens
    it: SQLite gives its ``-wal`` and ``-shm`` the same mode)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))


def make_folders(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each durably (its parent's entries fsynced)."""
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another writer made it meanwhile
            folder.mkdir()
        sync_folder(folder.parent)


def sync_folder(directory: Path) -> None:
    """Make renames, links and new entries in ``directory`` durable (fsync of the folder itself).

    Returns once an fsync of the folder that started after this call has finished. Writers into one
    folder share those fsyncs (group commit): while one runs, everyone who arrives waits for the
    next, which one of them runs for all, so many concurrent writes cost two fsyncs, not one each.
    """
    key = os.fspath(directory)
    with _folder_syncs_guard:
        folder = _folder_syncs.get(key)
        if folder is None:
            folder = _folder_syncs[key] = _FolderSync()
        folder.users += 1
    try:
        with folder.changed:
            wanted = folder.started + 1  # one running now may have started before this entry was made
            while folder.finished < wanted:
                if folder.running:
                    folder.changed.wait()
                    continue
                folder.running, folder.started = True, folder.started + 1
                generation, done = folder.started, False
                folder.changed.release()
                try:
                    _fsync_folder(directory)
                    done = True
                finally:
                    folder.changed.acquire()
                    folder.running = False
                    if done:  # interrupted, it covers nobody: the next one to wake runs another
                        folder.finished = generation
                    folder.changed.notify_all()
    finally:
        with _folder_syncs_guard:
            folder.users -= 1
            if not folder.users:
                del _folder_syncs[key]


class _FolderSync:
    """The fsyncs of one folder: how many began and which one finished last."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.started = 0
        self.finished = 0
        self.running = False
        self.users = 0  # threads inside sync_folder for this folder; the entry goes when none are


_folder_syncs: dict[str, _FolderSync] = {}
_folder_syncs_guard = threading.Lock()


def _fsync_folder(directory: Path) -> None:
    # Some systems cannot open a directory, which is fine: they have nothing to sync.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock named by ``lock_file`` for the ``with`` block (its folder is made if missing)."""
    if fcntl is None:
        with _thread_lock(str(lock_file)):
            yield
        return
    # A bare descriptor: the lock needs no buffered file object, and the folder is made only the
    # rare time it is missing (a first write, someone deleted it), not checked on every write.
    try:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    except FileNotFoundError:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            # Unlocked before closing: a child forked meanwhile shares the descriptor and would keep it locked.
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _thread_lock(key: str) -> threading.Lock:
    with _thread_locks_guard:
        return _thread_locks.setdefault(key, threading.Lock())
