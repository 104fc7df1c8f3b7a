"""``vaultbot backup``: one consistent snapshot of the store, the vault and the person's config.

The store is copied by SQLite's online backup on a connection of its own, so ``vaultbot run`` goes
on serving meanwhile (WAL: its writers do not wait for the copy) and the copy is one instant of it,
never a file copy torn across a transaction or missing its ``-wal``. The store goes first and the
vault after it, so the vault holds at least what the store says was written: a run after the
snapshot whose message the store still holds as unfinished is simply run again after a restore, and
finds its note already there (a re-run writing the same text makes no second note).

Notes are read once each, whole, and their hash taken of those bytes; a note another program
replaces meanwhile is in the archive as it was before or after, never half. The vault's own
databases (its meaning index) are copied by SQLite's backup too; its search index, staging and
lock files are not kept: a restored vault rebuilds them.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import aiosqlite

from bot.backup.archive import ArchiveWriter
from bot.backup.errors import BackupFailed
from bot.backup.secrets import without_secrets
from bot.db import BUSY_TIMEOUT_MS, WAL_FILES
from bot.private_files import make_private_folder
from bot.settings import Settings, config_file
from vault import PRIVATE_DIR

__all__ = [
    "ENV_FILE",
    "MATRIX_MEMBER",
    "STORE_MEMBER",
    "Backup",
    "archive_name",
    "config_files",
    "matrix_folder",
    "take_backup",
]

STORE_MEMBER = "store/vaultbot.db"
ENV_FILE = Path(".env")
# The Matrix channel's folder (its login's access token, its device keys, its sync token), in the archive
# only with the secrets: a copy of it is that device, able to read the person's encrypted rooms.
MATRIX_MEMBER = "secrets/matrix"
SUFFIX = ".tar.gz"
# In the vault's own folder: rebuilt on start (the search index), or only in use while it runs.
_NOT_KEPT = frozenset({"staging", "locks", "index.db"})
_SIDE_FILES = (*WAL_FILES, "-journal")


@dataclass
class Backup:
    """What a backup wrote: the archive, how many files, their bytes and the archive's, how long."""

    path: Path
    files: int = 0
    content_bytes: int = 0
    archive_bytes: int = 0
    seconds: float = 0.0
    with_secrets: bool = False
    left_out: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for the person: what was written and how big."""
        secrets = "with secrets" if self.with_secrets else "no secrets"
        line = (
            f"Wrote {self.path}: {self.files:,} files, {_size(self.content_bytes)} "
            f"in {_size(self.archive_bytes)} ({secrets}), in {self.seconds:.1f} s."
        )
        return " ".join([line, *(f"Left out: {what}." for what in self.left_out)])


def archive_name(moment: datetime) -> str:
    """The file name of a backup taken at ``moment`` (the person's local time): newest sorts last."""
    return f"vaultbot-{moment:%Y%m%d-%H%M%S}{SUFFIX}"


async def take_backup(settings: Settings, dest: Path, now: datetime, *, with_secrets: bool = False) -> Backup:
    """Write a backup to ``dest`` (a ``.tar.gz`` path, or a folder to name one in) and say what it holds.

    Raises :class:`BackupFailed` with one line when it cannot; no archive is then left under its name."""
    started = time.monotonic()
    store = settings.store.path
    if not await asyncio.to_thread(store.is_file):
        raise BackupFailed(f"there is no store at {store} to back up (VAULTBOT_STORE__PATH).")
    target = await asyncio.to_thread(_target, dest, now)
    backup = Backup(target, with_secrets=with_secrets)
    with tempfile.TemporaryDirectory(prefix=".vaultbot-backup-", dir=target.parent) as scratch:
        copy = Path(scratch) / "store.db"
        await _snapshot_store(store, copy)
        await asyncio.to_thread(_write, settings, backup, copy, now)
    backup.seconds = time.monotonic() - started
    return backup


async def _snapshot_store(store: Path, copy: Path) -> None:
    """The store as one instant, by SQLite's online backup, on a connection of this backup's own."""
    try:
        source = await aiosqlite.connect(store)
    except sqlite3.Error as exc:
        raise BackupFailed(f"cannot read the store {store}: {exc}") from None
    try:
        await source.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        target = sqlite3.connect(copy, check_same_thread=False)  # used in aiosqlite's thread
        try:
            # All pages in one step: in steps, every commit of `vaultbot run` would start it over.
            await source.backup(target, pages=-1)
        finally:
            target.close()
    except sqlite3.Error as exc:
        raise BackupFailed(f"cannot copy the store {store}: {exc}") from None
    finally:
        await source.close()


def _target(dest: Path, now: datetime) -> Path:
    """The archive's path: ``dest`` itself when it names a ``.tar.gz`` file, else a new name in it."""
    if dest.name.endswith((SUFFIX, ".tgz")) and not dest.is_dir():
        if dest.exists():
            raise BackupFailed(f"{dest} already exists; a backup never replaces a file.")
        folder, path = dest.parent, dest
    else:
        folder = dest
        path = dest / archive_name(now)
        n = 1
        while path.exists():  # two backups in one second
            n += 1
            path = dest / archive_name(now).replace(SUFFIX, f"-{n}{SUFFIX}")
    try:
        make_private_folder(folder)
    except OSError as exc:
        raise BackupFailed(f"cannot make the folder {folder}: {exc.strerror or exc}") from None
    return path


def _write(settings: Settings, backup: Backup, store_copy: Path, now: datetime) -> None:
    writer = ArchiveWriter(backup.path)
    try:
        writer.add_file(STORE_MEMBER, store_copy)
        _add_vault(writer, settings.vault.path.resolve(), backup, store_copy.parent)
        _add_config(writer, settings, backup)
        if backup.with_secrets:
            _add_matrix(writer, matrix_folder(settings), backup, store_copy.parent)
        backup.files = len(writer.manifest.files)
        backup.content_bytes = writer.manifest.size
        backup.archive_bytes = writer.finish(
            {
                "created_at": now.isoformat(timespec="seconds"),
                "with_secrets": backup.with_secrets,
                "left_out": backup.left_out,
            }
        )
    except BaseException:
        writer.abandon()
        raise


def _add_vault(writer: ArchiveWriter, root: Path, backup: Backup, scratch: Path) -> None:
    skip = {backup.path.parent.resolve(), scratch.resolve()}  # a backup folder inside the vault
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not _skipped_folder(here / d, root, skip))
        for name in sorted(files):
            path = here / name
            rel = path.relative_to(root).as_posix()
            private = rel.startswith(f"{PRIVATE_DIR}/")
            if private and (name in _NOT_KEPT or name.endswith(_SIDE_FILES)):
                continue
            if name.startswith(".vault-") and name.endswith(".tmp"):  # a write in progress
                continue
            if private and name.endswith(".db"):
                _add_database(writer, path, f"vault/{rel}", scratch, backup, lost="it is rebuilt from the notes")
            else:
                _add_live_file(writer, path, f"vault/{rel}", backup)


def _skipped_folder(path: Path, root: Path, skip: set[Path]) -> bool:
    if path.is_symlink() or path.resolve() in skip:
        return True
    rel = path.relative_to(root).parts
    return len(rel) == 2 and rel[0] == PRIVATE_DIR and rel[1] in _NOT_KEPT


def _add_live_file(writer: ArchiveWriter, path: Path, name: str, backup: Backup) -> None:
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):  # a symlink, a socket: not the person's text
            return
        data = path.read_bytes()
    except FileNotFoundError:  # deleted since it was listed: it is not in the vault any more
        return
    except OSError as exc:
        backup.left_out.append(f"{name} ({exc.strerror or exc})")
        return
    writer.add_bytes(name, data, info.st_mtime)


def _add_database(writer: ArchiveWriter, path: Path, name: str, scratch: Path, backup: Backup, *, lost: str) -> None:
    """The SQLite database at ``path`` as one instant of it; one that cannot be read is left out, and
    the backup says so and what that costs (``lost``)."""
    copy = scratch / f"{len(writer.manifest.files)}.db"
    try:
        with closing(sqlite3.connect(path)) as source, closing(sqlite3.connect(copy)) as target:
            source.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            source.backup(target)
    except sqlite3.Error as exc:
        backup.left_out.append(f"{name} ({exc}; {lost})")
        return
    writer.add_file(name, copy)


def _add_config(writer: ArchiveWriter, settings: Settings, backup: Backup) -> None:
    """The config file (its secrets blanked unless asked for), the prompt and prices, and ``.env``."""
    config = config_file()
    if config.is_file():
        text = config.read_text(encoding="utf-8", errors="replace")
        kept = text if backup.with_secrets else without_secrets(text)
        if kept is None:
            backup.left_out.append(f"{config} (it holds secrets vaultbot cannot take out; --with-secrets keeps it)")
        else:
            writer.add_bytes("config/vaultbot.toml", kept.encode(), config.stat().st_mtime)
    for name, path in config_files(settings)[1:]:
        if path.is_file():
            _add_live_file(writer, path, name, backup)
    if backup.with_secrets and ENV_FILE.is_file():
        _add_live_file(writer, ENV_FILE, "secrets/.env", backup)


def _add_matrix(writer: ArchiveWriter, folder: Path, backup: Backup, scratch: Path) -> None:
    """The Matrix channel's files: the key store (SQLite, which matrix-nio writes as it syncs) by SQLite's
    backup, the rest read whole; a write in progress and SQLite's side files are not kept."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*")):
        name = path.name
        if path.is_symlink() or not path.is_file() or name.endswith((*_SIDE_FILES, ".tmp")):
            continue
        member = f"{MATRIX_MEMBER}/{path.relative_to(folder).as_posix()}"
        if name.endswith(".db"):
            _add_database(writer, path, member, scratch, backup, lost="encrypted rooms need the bot to log in anew")
        else:
            _add_live_file(writer, path, member, backup)


def matrix_folder(settings: Settings) -> Path:
    """Where the Matrix channel keeps its files: ``matrix/`` in the data folder, beside the store."""
    return settings.store.path.parent / "matrix"


def config_files(settings: Settings) -> list[tuple[str, Path]]:
    """Each config file's member name in the archive and where the settings in force keep it."""
    return [
        ("config/vaultbot.toml", config_file()),
        ("config/system_prompt.md", settings.model.system_prompt),
        ("config/pricing.toml", settings.model.pricing),
    ]


def _size(n: int) -> str:
    """Bytes as a person reads them: ``812 bytes``, ``48.2 MB`` (powers of 1000, as disks are sold)."""
    if n < 1000:
        return f"{n} bytes"
    for unit, scale in (("KB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if n < scale * 1000 or unit == "GB":
            return f"{n / scale:.1f} {unit}"
    raise AssertionError("unreachable")
