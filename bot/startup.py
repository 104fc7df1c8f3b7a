"""What a command needs before it can start: the store and the vault, opened or refused in one line.

A problem here is the user's to fix (a path that names the wrong thing, a folder they cannot
write), so it is a :class:`StartupError` naming the setting and the reason, which the command
prints on one line and exits 2 on, as it does for a bad setting; ``vaultbot doctor`` reports the
same sentences.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bot.db import Database
from bot.private_files import make_private_folder, open_private
from bot.settings import VaultSettings

if TYPE_CHECKING:
    from vault import Vault

__all__ = ["RUN_LOCK", "StartupError", "capture_folder", "only_run", "open_database", "open_vault", "probe_folder"]

PROBE_PREFIX = ".vaultbot-probe-"
# In the store's folder: held by the one `vaultbot run` that serves it.
RUN_LOCK = "vaultbot.run.lock"


class StartupError(Exception):
    """Something a command needs cannot be used; the message is one line naming it and why."""


@contextmanager
def only_run(folder: Path) -> Iterator[None]:
    """Hold the run lock of the data folder ``folder`` while the block runs, or raise
    :class:`StartupError` naming the process that holds it.

    Two runs on one store would poll one Telegram token (Telegram's 409 then ends one of them, not
    always the newcomer) and answer each message twice, so the second is refused before it polls.
    The kernel lets go of the lock when its process ends, however it ends: a crash leaves none.
    """
    make_private_folder(folder)
    fd = open_private(str(folder / RUN_LOCK), os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise StartupError(
                f"another `vaultbot run` (process {holder}) already serves the data folder {folder}: "
                "stop it first, or give this one a store of its own (VAULTBOT_STORE__PATH)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


async def open_database(path: Path, *, write: bool = True) -> Database:
    """Open and migrate the store at ``path``, or raise :class:`StartupError` saying why not.

    With ``write`` (a command that records anything) a store it could only read is refused too:
    SQLite opens a read-only file without complaint, and the first message would be lost on it.
    """
    try:
        db = await Database.open(path)
    except (OSError, sqlite3.Error) as exc:
        reason = await asyncio.to_thread(_store_reason, Path(path), exc)
        raise StartupError(f"cannot open the store {path} (VAULTBOT_STORE__PATH): {reason}") from None
    if write and not await asyncio.to_thread(os.access, path, os.W_OK):
        await db.close()
        raise StartupError(f"cannot open the store {path} (VAULTBOT_STORE__PATH): {path} is read-only")
    return db


def open_vault(settings: VaultSettings) -> Vault:
    """Open the vault once its capture folder proved writable, or raise :class:`StartupError`
    (blocking: call it in a thread)."""
    # Imported here: the vault brings numpy, which the commands that only read the store never need.
    from vault import EnglishEmbedder, MultilingualEmbedder, ReadingLimits, Vault

    problem = _not_a_folder(settings.path)
    if problem is None:
        try:
            meaning = settings.search_by_meaning
            reading = ReadingLimits(settings.page_seconds, settings.document_seconds, settings.document_memory_mb)
            notes = Vault(
                settings.path,
                max_staleness=settings.index_staleness,
                embedder=MultilingualEmbedder() if meaning else None,
                english=EnglishEmbedder() if meaning else None,
                reading=reading,
            )
        except OSError as exc:
            problem = _os_reason(exc)
        else:
            problem = probe_folder(capture_folder(settings, notes.root))
            if problem is None:
                return notes
            notes.close()
    raise StartupError(f"cannot use the vault {settings.path} (VAULTBOT_VAULT__PATH): {problem}")


def capture_folder(settings: VaultSettings, root: Path) -> Path:
    """The folder capture mode files into (the inbox, or the daily notes' folder), or ``root``
    while it does not exist yet: that is where it will be made."""
    folder = root / (settings.daily_folder if settings.capture_to == "daily" else settings.inbox)
    return folder if folder.is_dir() else root


def probe_folder(folder: Path) -> str | None:
    """Why a file cannot be made and removed in ``folder``, or None when one was (blocking)."""
    problem = _not_a_folder(folder)
    if problem is not None:
        return problem
    try:
        handle, name = tempfile.mkstemp(dir=folder, prefix=PROBE_PREFIX)
        os.close(handle)
        os.unlink(name)
    except OSError as exc:
        return f"{folder} is not writable ({exc.strerror or exc})"
    return None


def _not_a_folder(path: Path) -> str | None:
    """What stands in the way of ``path`` being a folder: it, or a folder above it, is a file."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else f"{candidate} is a file, not a folder"
    return None


def _store_reason(path: Path, exc: OSError | sqlite3.Error) -> str:
    if path.is_dir():
        return f"{path} is a folder, not a database file"
    above = _not_a_folder(path.parent)
    if above is not None:
        return above
    if isinstance(exc, OSError):
        return _os_reason(exc)
    if path.exists() and not os.access(path, os.R_OK):
        return f"{path} cannot be read (permission denied)"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is read-only"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"{path.parent} is not writable (permission denied)"
    return str(exc)  # SQLite's own words: "file is not a database", "database is locked"


def _os_reason(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"
