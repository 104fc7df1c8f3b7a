"""History, the audit trail and the interaction log on a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.db import Database
from bot.store import Store
from tests.helpers import WriteLock


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    db = await Database.open(tmp_path / "store.db")
    yield Store(db)
    await db.close()


def turn(text: str) -> list[dict[str, object]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]


async def test_history_keeps_the_last_turns_in_order_and_each_turn_once(store: Store) -> None:
    for i in range(5):
        assert await store.append_turn("c", f"in-{i}", turn(f"m{i}"))
    assert not await store.append_turn("c", "in-4", turn("a re-run"))
    await store.append_turn("other", "in-x", turn("elsewhere"))
    history = await store.load_history("c", max_turns=2)
    assert [t.messages[0]["content"] for t in history] == ["m3", "m4"]
    assert await store.load_history("c", max_turns=0) == []


async def test_a_run_records_its_steps_usage_and_outcome(store: Store) -> None:
    await store.start_run("r1", conversation="c", inbound_id="in-1", model="claude", mode="assistant")
    await store.add_step(
        "r1",
        kind="model",
        name="claude",
        input={"last": "hi"},
        output={"stop_reason": "tool_use"},
        is_error=False,
        duration_ms=1.5,
        usage={"input_tokens": 10, "output_tokens": 3},
    )
    await store.add_step(
        "r1",
        kind="tool",
        name="vault_read",
        input={"path": "../x"},
        output={"success": False},
        is_error=True,
        duration_ms=0.2,
    )
    await store.finish_run(
        "r1",
        status="completed",
        reason=None,
        usage={"input_tokens": 10},
        tools_called=["vault_read"],
        final_text="done",
    )
    run = await store.get_run("r1")
    assert run is not None
    assert (
        run["status"] == "completed" and run["tools_called"] == ["vault_read"] and run["usage"] == {"input_tokens": 10}
    )
    assert run["duration_ms"] >= 0
    assert [(s["index"], s["kind"], s["name"], s["is_error"]) for s in run["steps"]] == [
        (0, "model", "claude", False),
        (1, "tool", "vault_read", True),
    ]
    assert run["steps"][1]["input"] == {"path": "../x"}
    assert [r["id"] for r in await store.list_runs()] == ["r1"]
    assert await store.get_run("nope") is None


async def test_the_interaction_log_lists_newest_first_and_filters_by_time(store: Store) -> None:
    first = await store.add_interaction(conversation="c", category="note", summary="Saved oat milk", run_id="r1")
    second = await store.add_interaction(conversation="c", category="error", summary="Lost nothing", run_id=None)
    entries = await store.list_interactions()
    assert [e["id"] for e in entries] == [second, first]
    assert set(entries[0]) >= {"id", "created_at", "conversation", "category", "summary", "run_id"}
    assert datetime.fromisoformat(entries[0]["created_at"]).tzinfo is not None
    assert await store.list_interactions(since=datetime.now(UTC) + timedelta(minutes=1)) == []
    assert len(await store.list_interactions(limit=1)) == 1


async def test_a_reset_starts_the_history_afresh_for_that_conversation_only(store: Store) -> None:
    await store.append_turn("c", "in-1", turn("before"))
    await store.append_turn("d", "in-2", turn("other"))
    await store.reset_history("c")
    assert await store.load_history("c", max_turns=10) == []
    await store.append_turn("c", "in-3", turn("after"))
    assert [t.messages[0]["content"] for t in await store.load_history("c", 10)] == ["after"]
    assert len(await store.load_history("d", 10)) == 1


async def test_a_run_cut_short_by_a_crash_is_closed_as_interrupted_when_its_message_runs_again(store: Store) -> None:
    await store.start_run("crashed", conversation="c", inbound_id="in-9", model="m", mode="assistant")
    await store.start_run("again", conversation="c", inbound_id="in-9", model="m", mode="assistant", rerun=True)
    crashed = await store.get_run("crashed")
    assert crashed is not None and crashed["status"] == "interrupted" and "stopped during this run" in crashed["reason"]
    again = await store.get_run("again")
    assert again is not None and again["status"] == "running"


async def test_a_step_that_cannot_be_written_is_an_error_for_its_caller_and_is_not_in_the_trail(
    tmp_path: Path,
) -> None:
    # Steps are awaited writes: a turn never goes on believing a step was recorded when it was not.
    db = await Database.open(tmp_path / "store.db")
    try:
        store = Store(db)
        await store.start_run("r1", conversation="c", inbound_id="in-1", model="m", mode="assistant")
        await db.fetchall("PRAGMA busy_timeout = 20")  # the 5 s default, scaled down
        lock = WriteLock(db.path)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                await store.add_step(
                    "r1", kind="tool", name="vault_write", input={}, output={}, is_error=False, duration_ms=1.0
                )
        finally:
            lock.release()
        await store.add_step(
            "r1", kind="tool", name="send_message", input={}, output={}, is_error=False, duration_ms=1.0
        )
        run = await store.get_run("r1")
    finally:
        await db.close()
    assert run is not None
    assert [(step["index"], step["name"]) for step in run["steps"]] == [(0, "send_message")]
