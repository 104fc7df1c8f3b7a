"""The schema as built from a blank database, and migrations applied once."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.db import Database
from bot.db.migrations import MIGRATIONS, m011_lighter_turn_writes, migrate
from bot.store import Store
from bot.store.reader import StoreReader


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


async def test_an_audit_trail_written_before_the_steps_table_changed_shape_is_kept_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A database from before m011: its runs' steps must read back the same, and a run goes on
    # numbering its steps where it left off.
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        monkeypatch.setattr("bot.db.migrations.MIGRATIONS", MIGRATIONS[: MIGRATIONS.index(m011_lighter_turn_writes)])
        migrate(conn)
        monkeypatch.undo()
        conn.execute(
            "INSERT INTO runs (id, conversation, inbound_id, model, mode, status, started_at) "
            "VALUES ('r1', 'c', 'in-1', 'claude', 'assistant', 'running', '2026-11-01T10:00:00.000000+00:00')"
        )
        for idx, (kind, name, output) in enumerate(
            [("model", "claude", {"stop_reason": "tool_use"}), ("tool", "vault_write", {"path": "Inbox/a.md"})]
        ):
            conn.execute(
                "INSERT INTO steps (run_id, idx, kind, name, input, output, is_error, duration_ms, usage, "
                "created_at, summary) VALUES ('r1', ?, ?, ?, '{}', ?, 0, 1.5, NULL, ?, ?)",
                (idx, kind, name, json.dumps(output), f"2026-11-01T10:00:0{idx}.000000+00:00", f"step {idx}"),
            )
    finally:
        conn.close()

    db = await Database.open(path)
    try:
        store = Store(db)
        await store.add_step(
            "r1",
            kind="model",
            name="claude",
            input={},
            output={"stop_reason": "end_turn"},
            is_error=False,
            duration_ms=1,
        )
        run = await store.get_run("r1")
        reader = StoreReader(db)
        notes = await reader.notes_of_runs(["r1"])
        by_path = await reader.runs_of_note("Inbox/a.md")
    finally:
        await db.close()
    assert run is not None
    assert [(s["index"], s["name"], s["output"], s["summary"]) for s in run["steps"]] == [
        (0, "claude", {"stop_reason": "tool_use"}, "step 0"),
        (1, "vault_write", {"path": "Inbox/a.md"}, "step 1"),
        (2, "claude", {"stop_reason": "end_turn"}, None),
    ]
    assert notes == {"r1": ["Inbox/a.md"]}
    assert [r["run_id"] for r in by_path] == ["r1"]
