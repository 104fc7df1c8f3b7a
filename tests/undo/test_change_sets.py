"""A run's change set on a real store: a run that waited for the person's consent keeps what it
changed before it waited, and its end adds what it changed after."""

from __future__ import annotations

from pathlib import Path

from bot.db import Database
from bot.store import Changes, ChangeSet, Store
from vault import Change


async def test_a_run_that_waited_keeps_its_changes_from_before_and_after(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "store.db")
    try:
        store = Store(db)
        await store.start_run("r1", conversation="c", inbound_id="m1", model="m", mode="assistant")
        before = Change("created", "Inbox/Before.md", None, "a" * 64, detail={"text": "before the question"})
        after = Change("appended", "Inbox/Before.md", "a" * 64, "b" * 64, detail={"after_tail": "\n\nafter"})
        await store.keep_changes("r1", ChangeSet([before]))  # the run waits for the person here
        await store.keep_changes("r1", ChangeSet())  # and asks again, having changed nothing more
        await store.finish_run(
            "r1",
            status="completed",
            reason=None,
            usage={},
            tools_called=[],
            final_text=None,
            changes=ChangeSet([after]),
        )
        assert await Changes(db).of_run("r1") == [before, after]
        assert await Changes(db).latest_to_undo("c") == "r1"

        await store.start_run("r2", conversation="c", inbound_id="m2", model="m", mode="assistant")
        await store.finish_run("r2", status="completed", reason=None, usage={}, tools_called=[], final_text=None)
        assert await Changes(db).of_run("r2") == []
        assert await Changes(db).latest_to_undo("c") == "r1"  # a run that changed nothing is not one to undo
    finally:
        await db.close()
