"""The schema as built from a blank database, and migrations applied once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.db import Database
from bot.migrations import MIGRATIONS, migrate


async def test_a_blank_database_gets_every_table_and_records_each_migration(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "new.db")
    try:
        tables = {row["name"] for row in await db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")}
        applied = [row["name"] for row in await db.fetchall("SELECT name FROM _migrations ORDER BY rowid")]
        journal = await db.fetchone("PRAGMA journal_mode")
    finally:
        await db.close()
    assert {
        "bus_messages",
        "bus_heads",
        "bus_progress",
        "turns",
        "runs",
        "steps",
        "interactions",
        "history_resets",
        "usage",
    } <= tables
    assert applied == [m.__name__ for m in MIGRATIONS]
    assert journal is not None and journal[0] == "wal"


def test_migrating_again_applies_nothing(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "again.db", isolation_level=None)
    try:
        assert migrate(conn) == [m.__name__ for m in MIGRATIONS]
        assert migrate(conn) == []
    finally:
        conn.close()
