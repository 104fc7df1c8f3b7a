"""The Matrix channel's folder (its login's access token, its device keys, its sync token) is a secret: a
backup holds it only with ``--with-secrets``, and a restore puts it back, owner-only, beside the store."""

from __future__ import annotations

import gzip
import sqlite3
import stat
import tarfile
from collections.abc import Awaitable, Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app import App
from bot.backup import TargetNotEmpty, restore, take_backup
from bot.private_files import make_private_folder
from tests.conftest import make_settings

NOW = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)
ACCESS_TOKEN = "syt_Ym90_secretaccesstoken_0aBcDe"
SESSION = f'{{"user_id": "@bot:localhost", "device_id": "VAULTBOT1", "access_token": "{ACCESS_TOKEN}"}}'
KEYS = "keys/@bot:localhost_VAULTBOT1.db"


def matrix_folder(data: Path) -> Path:
    """A Matrix channel's folder as the channel leaves it: session, sync token, a key store in WAL mode."""
    folder = data / "matrix"
    make_private_folder(folder / "keys")
    (folder / "session.json").write_text(SESSION)
    (folder / "sync-token").write_text("s42_7_0_1_1_1_1_3_0_1")
    (folder / ".sync-token.tmp").write_text("s43_half_written")
    with closing(sqlite3.connect(folder / KEYS)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE olmaccount (account TEXT)")
        db.execute("INSERT INTO olmaccount VALUES ('pickled-olm-account')")
        db.commit()
    return folder


def unpacked(archive: Path) -> bytes:
    return gzip.decompress(archive.read_bytes())


async def test_a_backup_without_secrets_leaves_the_matrix_login_out(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app()
    matrix_folder(app.settings.store.path.parent)
    backup = await take_backup(app.settings, tmp_path / "b", NOW)
    with tarfile.open(backup.path) as archive:
        names = archive.getnames()
    assert not any("matrix" in name for name in names)
    assert ACCESS_TOKEN.encode() not in unpacked(backup.path) and b"pickled-olm-account" not in unpacked(backup.path)


async def test_with_secrets_the_matrix_login_is_backed_up_and_restored_owner_only(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app()
    matrix_folder(app.settings.store.path.parent)
    backup = await take_backup(app.settings, tmp_path / "b", NOW, with_secrets=True)
    assert backup.left_out == []

    settings = make_settings(tmp_path / "restored")
    await restore(settings, backup.path)
    folder = settings.store.path.parent / "matrix"
    assert (folder / "session.json").read_text() == SESSION
    assert (folder / "sync-token").read_text() == "s42_7_0_1_1_1_1_3_0_1"
    assert not (folder / ".sync-token.tmp").exists()  # a write in progress is not the token
    with closing(sqlite3.connect(folder / KEYS)) as db:  # the key store as SQLite had it, WAL included
        assert db.execute("SELECT account FROM olmaccount").fetchall() == [("pickled-olm-account",)]
    for path in (folder, folder / "keys"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for path in (folder / "session.json", folder / "sync-token", folder / KEYS):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_restore_never_mixes_the_backups_matrix_login_with_one_already_there(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app()
    matrix_folder(app.settings.store.path.parent)
    backup = await take_backup(app.settings, tmp_path / "b", NOW, with_secrets=True)
    settings = make_settings(tmp_path / "restored")
    make_private_folder(settings.store.path.parent / "matrix")
    (settings.store.path.parent / "matrix" / "session.json").write_text("{}")
    with pytest.raises(TargetNotEmpty, match="Matrix login"):
        await restore(settings, backup.path)
    assert not settings.store.path.exists()
    assert (settings.store.path.parent / "matrix" / "session.json").read_text() == "{}"
