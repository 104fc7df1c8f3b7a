"""Conflict copies a sync tool leaves are said once in chat, to the person who last wrote."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from bot.app import App
from bot.backup import ConflictNotices
from bot.bus import INBOUND, InboundMessage, Sender
from tests.helpers import outbox, subprocess_env


async def test_each_conflict_copy_is_said_once_in_the_chat_that_last_wrote(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app()
    notices = ConflictNotices(app.db, app.bus, app.notes)
    copy = tmp_path / "vault" / "Garden.sync-conflict-20261123-140501-ABCDEFG.md"
    copy.write_text("the phone's version")
    assert await notices.tell_new() == []  # nobody has written yet: no one to tell

    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="hi")
    await app.bus.publish(INBOUND, message, conversation="terminal:ann")
    await app.runner_worker().run(burst=True)
    before = len(await outbox(app))
    assert await notices.tell_new() == ["Garden.sync-conflict-20261123-140501-ABCDEFG.md"]
    assert await notices.tell_new() == []  # once
    (tmp_path / "vault" / "Plan (Conflicted copy Pixel 202611231405).md").write_text("x")
    assert await notices.tell_new() == ["Plan (Conflicted copy Pixel 202611231405).md"]

    said = (await outbox(app))[before:]
    assert [(m.recipient, m.kind) for m in said] == [("ann", "notice"), ("ann", "notice")]
    assert "Garden.sync-conflict-20261123-140501-ABCDEFG.md" in said[0].text and "Plan" not in said[0].text
    assert "Plan (Conflicted copy Pixel 202611231405).md" in said[1].text
    again = ConflictNotices(app.db, app.bus, app.notes)  # after a restart: still once
    assert await again.tell_new() == []


def test_vaultbot_doctor_lists_conflict_copies_and_git_markers(tmp_path: Path) -> None:
    notes = tmp_path / "data" / "vault"
    notes.mkdir(parents=True)
    (notes / "Garden.md").write_text("tulips")
    clean = subprocess.run(
        [sys.executable, "-m", "bot", "doctor"], capture_output=True, text=True, cwd=tmp_path, env=subprocess_env()
    )
    assert "ok   sync conflicts: none in the vault" in clean.stdout.splitlines()
    (notes / "Garden.sync-conflict-20261123-140501-ABCDEFG.md").write_text("tulips and roses")
    (notes / "Plans.md").write_text("<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> phone\n")
    done = subprocess.run(
        [sys.executable, "-m", "bot", "doctor"], capture_output=True, text=True, cwd=tmp_path, env=subprocess_env()
    )
    [line] = [line for line in done.stdout.splitlines() if "sync conflicts:" in line]
    assert line == (
        "FAIL  sync conflicts: 2 to merge by hand (not searched as notes): Garden.sync-conflict-20261123-140501-"
        "ABCDEFG.md is a sync tool's conflict copy; Plans.md has git conflict markers in it"
    )
    assert done.returncode == 1
