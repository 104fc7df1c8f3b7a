"""``vaultbot restore ARCHIVE`` and ``vaultbot backup --verify ARCHIVE``.

A restore fills an empty data folder and vault and nothing else: the store must not exist yet and the
vault must be missing or empty, so an archive is never mixed with what is there. Every hash is checked
before a byte is written; then the archive is read again and each member compared with the manifest
once more as it is written (the file could have changed between the readings). The store comes last,
under a temporary name renamed into place: a restore cut short leaves no store, so nothing runs on
half a vault, and says so when run again.

The config files go where the settings in force look for them, when nothing is there yet; one that
is there already is kept, and the restore says so.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from bot.backup.archive import Manifest, read_archive
from bot.backup.errors import BadArchive, TargetNotEmpty
from bot.backup.take import ENV_FILE, MATRIX_MEMBER, STORE_MEMBER, config_files, matrix_folder
from bot.db import WAL_FILES
from bot.private_files import FILE_MODE, make_private_folder, open_private
from bot.settings import Settings
from vault import PRIVATE_DIR

__all__ = ["Restored", "restore", "verify"]


@dataclass
class Restored:
    """What a restore wrote, and the config files it left as they were."""

    files: int = 0
    bytes: int = 0
    kept: list[str] = field(default_factory=list)

    def describe(self, settings: Settings) -> str:
        """One line for the person."""
        line = (
            f"Restored {self.files:,} files ({self.bytes:,} bytes): the store {settings.store.path} "
            f"and the vault {settings.vault.path}."
        )
        return " ".join([line, *(f"Kept your {path}; the backup's copy is not restored." for path in self.kept)])


async def verify(archive: Path) -> Manifest:
    """Check every member of ``archive`` against its manifest; raises :class:`BadArchive` saying why not."""
    return await asyncio.to_thread(read_archive, archive)


async def restore(settings: Settings, archive: Path) -> Restored:
    """Fill the empty store and vault the settings name from ``archive``; raises
    :class:`TargetNotEmpty` or :class:`BadArchive` with one line, before writing anything."""
    await asyncio.to_thread(_refuse_unless_empty, settings)
    manifest = await verify(archive)
    if STORE_MEMBER not in manifest.files:
        raise BadArchive(f"{archive} holds no store; it is not a vaultbot backup.")
    if any(name.startswith(f"{MATRIX_MEMBER}/") for name in manifest.files):
        await asyncio.to_thread(_refuse_a_matrix_login, matrix_folder(settings))
    return await asyncio.to_thread(_write_all, settings, archive, manifest)


def _refuse_unless_empty(settings: Settings) -> None:
    store = settings.store.path
    for path in (store, *(store.with_name(store.name + suffix) for suffix in WAL_FILES)):
        if path.exists():
            raise TargetNotEmpty(
                f"{path} already exists: vaultbot restore fills only an empty data folder "
                "(move it away, or set VAULTBOT_STORE__PATH to a new place)."
            )
    notes = settings.vault.path
    if notes.exists() and (not notes.is_dir() or any(notes.iterdir())):
        raise TargetNotEmpty(
            f"the vault {notes} is not empty: vaultbot restore fills only an empty vault "
            "(move it away, or set VAULTBOT_VAULT__PATH to a new folder)."
        )


def _refuse_a_matrix_login(folder: Path) -> None:
    """A Matrix login already there is never mixed with the backup's (its keys are another device's)."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise TargetNotEmpty(
            f"{folder} is not empty: vaultbot restore puts the backup's Matrix login there only when it is "
            "(move it away to restore the backup's)."
        )


def _write_all(settings: Settings, archive: Path, manifest: Manifest) -> Restored:
    restored = Restored()
    root = settings.vault.path
    store = settings.store.path
    make_private_folder(store.parent)
    pending_store = store.with_name(f".{store.name}.restoring")
    pending_store.unlink(missing_ok=True)
    targets = {**{name: path for name, path in config_files(settings)}, "secrets/.env": ENV_FILE}
    matrix = matrix_folder(settings)

    def write(name: str, data: bytes) -> None:
        if hashlib.sha256(data).hexdigest() != manifest.files[name]["sha256"]:
            raise BadArchive(f"{archive} changed while it was restored ({name}); restore it again into empty folders.")
        if name == STORE_MEMBER:
            _create(pending_store, data, private=True)
            return
        if name.startswith("vault/"):
            rel = name.removeprefix("vault/")
            private = rel.startswith(f"{PRIVATE_DIR}/")
            if private:
                make_private_folder(root / PRIVATE_DIR)
            _create(root / rel, data, private=private)
        elif name.startswith(f"{MATRIX_MEMBER}/"):
            path = matrix / name.removeprefix(f"{MATRIX_MEMBER}/")
            for folder in [*path.relative_to(matrix).parents][::-1]:
                make_private_folder(matrix / folder)
            _create(path, data, private=True)
        elif name in targets:
            _config(targets[name], data, restored)
            return
        restored.files += 1
        restored.bytes += len(data)

    root.mkdir(parents=True, exist_ok=True)
    read_archive(archive, write)
    os.replace(pending_store, store)
    restored.files += 1  # counted when its name is taken: the store is there only now
    restored.bytes += manifest.files[STORE_MEMBER]["size"]
    return restored


def _create(path: Path, data: bytes, *, private: bool) -> None:
    """Write a new file (never over one), on disk before the restore goes on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    fd = open_private(str(path), flags) if private else os.open(path, flags, 0o666)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    if private:
        os.chmod(path, FILE_MODE)


def _config(path: Path, data: bytes, restored: Restored) -> None:
    if path.exists():
        if path.read_bytes() != data:
            restored.kept.append(str(path))
        return
    _create(path, data, private=path == ENV_FILE)
    restored.files += 1
    restored.bytes += len(data)
