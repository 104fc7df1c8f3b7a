"""Backups of a real store and vault while messages are being filed, checked and restored in-process."""

from __future__ import annotations

import asyncio
import io
import sqlite3
import tarfile
from collections.abc import Awaitable, Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app import App
from bot.backup import BadArchive, TargetNotEmpty, restore, take_backup, verify
from bot.bus import INBOUND, InboundMessage, Sender
from tests.conftest import make_settings

NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)


async def publish(app: App, texts: list[str]) -> None:
    for text in texts:
        message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=text)
        await app.bus.publish(INBOUND, message, conversation="terminal:ann")
        await asyncio.sleep(0)


def completed_notes(store: Path) -> list[str]:
    """The texts of the messages the store says were filed (capture mode logs each as a completed run)."""
    with closing(sqlite3.connect(store)) as db:
        rows = db.execute("SELECT summary FROM interactions WHERE category = 'capture'").fetchall()
    return [row[0].removeprefix("Captured to the inbox: ") for row in rows]


async def test_a_backup_taken_while_messages_are_filed_loses_none_and_restores_consistent(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app()
    worker = app.runner_worker()
    working = asyncio.create_task(worker.run())
    texts = [f"soak message {n:03d}" for n in range(120)]
    await publish(app, texts[:40])
    sending = asyncio.create_task(publish(app, texts[40:]))
    backups = [await take_backup(app.settings, tmp_path / "backups", NOW) for _ in range(2)]
    await sending
    await worker.stop(grace=30)
    await app.runner_worker().run(burst=True)
    working.cancel()

    live = {p.stem for p in (tmp_path / "vault" / "Inbox").glob("*.md")}
    assert live == set(texts)  # none lost while the backups ran
    for backup in backups:
        manifest = await verify(backup.path)  # the archive opens and every hash matches
        assert backup.files == len(manifest.files) and backup.archive_bytes == backup.path.stat().st_size

    restored = make_settings(tmp_path / "restored")
    await restore(restored, backups[-1].path)
    filed = completed_notes(restored.store.path)
    on_disk = {p.stem for p in (tmp_path / "restored" / "vault" / "Inbox").glob("*.md")}
    assert filed and set(filed) <= on_disk  # every note the restored store says it filed is there
    assert all((tmp_path / "restored" / "vault" / "Inbox" / f"{t}.md").stat().st_size > 0 for t in on_disk)


async def test_a_restored_store_and_vault_carry_on_where_they_were(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app()
    await publish(app, ["oat milk", "call mum"])
    await app.runner_worker().run(burst=True)
    backup = await take_backup(app.settings, tmp_path / "out.tar.gz", NOW)
    assert backup.path == tmp_path / "out.tar.gz"

    settings = make_settings(tmp_path / "new machine")
    said = (await restore(settings, backup.path)).describe(settings)
    assert "Restored" in said and str(settings.vault.path) in said
    async with await App.open(settings) as again:
        runs = await again.store.list_runs(limit=10)
        assert [run["status"] for run in runs] == ["completed", "completed"]
        message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="/undo")
        await again.bus.publish(INBOUND, message, conversation="terminal:ann")
        await again.runner_worker().run(burst=True)
    notes = settings.vault.path
    assert (notes / "Inbox" / "oat milk.md").exists() and not (notes / "Inbox" / "call mum.md").exists()
    assert (notes / ".trash" / "Inbox" / "call mum.md").exists()


async def test_restore_refuses_a_store_or_vault_that_is_not_empty(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app()
    backup = await take_backup(app.settings, tmp_path / "b", NOW)
    with pytest.raises(TargetNotEmpty, match="already exists"):
        await restore(app.settings, backup.path)
    settings = make_settings(tmp_path / "other")
    settings.vault.path.mkdir(parents=True)
    (settings.vault.path / "mine.md").write_text("my own note")
    with pytest.raises(TargetNotEmpty, match="is not empty"):
        await restore(settings, backup.path)
    assert not settings.store.path.exists()
    assert sorted(p.name for p in settings.vault.path.iterdir()) == ["mine.md"]


@pytest.mark.parametrize("damage", ["truncated", "flipped", "member swapped", "not an archive"])
async def test_a_damaged_archive_is_refused_before_anything_is_written(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]], damage: str
) -> None:
    app = await make_app()
    await publish(app, ["a note worth keeping " * 50])
    await app.runner_worker().run(burst=True)
    good = (await take_backup(app.settings, tmp_path / "good.tar.gz", NOW)).path
    bad = tmp_path / "bad.tar.gz"
    data = good.read_bytes()
    if damage == "truncated":
        bad.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "flipped":
        bad.write_bytes(data[:200] + bytes(b ^ 0xFF for b in data[200:216]) + data[216:])
    elif damage == "member swapped":  # a whole, valid gzip whose note is not the one the manifest hashed
        with tarfile.open(good) as source, tarfile.open(bad, "w:gz") as target:
            for member in source.getmembers():
                body = source.extractfile(member).read()  # type: ignore[union-attr]
                if member.name.startswith("vault/Inbox/"):
                    body = body.replace(b"worth", b"WORTH")
                target.addfile(member, io.BytesIO(body))
    else:
        bad.write_text("just some text")
    with pytest.raises(BadArchive) as refused:
        await verify(bad)
    assert "\n" not in str(refused.value)
    settings = make_settings(tmp_path / "fresh")
    with pytest.raises(BadArchive):
        await restore(settings, bad)
    assert not settings.store.path.exists()
    assert not settings.vault.path.exists() or not any(settings.vault.path.iterdir())


async def test_the_vaults_own_databases_are_copied_by_sqlite_and_what_is_rebuilt_is_left_out(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app()
    await publish(app, ["a note"])
    await app.runner_worker().run(burst=True)
    vectors = tmp_path / "vault" / ".vaultbot" / "vectors.db"
    with closing(sqlite3.connect(vectors, isolation_level=None)) as db:  # open, its last commit in the WAL
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE vectors (path TEXT, v BLOB)")
        db.execute("INSERT INTO vectors VALUES ('a note.md', x'00ff')")
        db.execute("BEGIN")
        db.execute("INSERT INTO vectors VALUES ('not committed.md', x'00')")  # a write under way: not in the copy
        backup = await take_backup(app.settings, tmp_path / "b", NOW)
        db.execute("ROLLBACK")
    with tarfile.open(backup.path) as tar:
        names = set(tar.getnames())
        copied = tmp_path / "copied.db"
        copied.write_bytes(tar.extractfile("vault/.vaultbot/vectors.db").read())  # type: ignore[union-attr]
    with closing(sqlite3.connect(copied)) as db:
        assert db.execute("SELECT path FROM vectors").fetchall() == [("a note.md",)]
    assert "vault/Inbox/a note.md" in names
    assert not [n for n in names if n.endswith(("index.db", "-wal", "-shm")) or "/staging/" in n or "/locks/" in n]
