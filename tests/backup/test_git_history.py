"""VAULTBOT_VAULT__GIT=true with the real `git`: a commit per run that changed notes, none for one that
changed nothing, the person's own changes left alone, undo its own commit, never a push."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

from bot.app import App
from bot.backup import GitHistory
from bot.bus import INBOUND, InboundMessage, Sender


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


async def say(app: App, text: str) -> None:
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=text)
    await app.bus.publish(INBOUND, message, conversation="terminal:ann")
    await app.runner_worker().run(burst=True)


async def test_each_run_that_changed_notes_is_one_commit(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "Mine.md").write_text("my own note\n")
    git(root, "add", "Mine.md")
    git(root, "-c", "user.name=Ann", "-c", "user.email=ann@example.com", "commit", "--quiet", "-m", "my vault")
    app = await make_app(vault={"git": True})
    history = GitHistory(app.db, app.notes.root, poll_interval=0.05)
    await history.begin()

    (root / "Mine.md").write_text("my own note, edited and not committed\n")
    await say(app, "buy oat milk")
    assert await history.commit_finished() == 1
    await say(app, "/status")  # answered without changing a note
    assert await history.commit_finished() == 0
    await say(app, "/undo")
    looping = asyncio.create_task(history.run())  # the loop, as `vaultbot run` runs it
    await history.stop()
    await looping

    runs = await app.store.list_runs(limit=10)
    log = git(root, "log", "--format=%an <%ae>|%s").splitlines()
    assert len(log) == 3 and log[-1] == "Ann <ann@example.com>|my vault"
    undo, capture = [line.split("|", 1) for line in log[:2]]
    assert undo[0] == capture[0] == "vaultbot <vaultbot@localhost>"
    by_status = {run["id"]: run for run in runs}
    assert capture[1].startswith("vaultbot run ") and capture[1].split()[2].rstrip(":") in by_status
    assert "Captured to the inbox: buy oat milk" in capture[1] and "Undid run" in undo[1]
    assert git(root, "show", "--name-status", "--format=", "HEAD~1").split("\t") == ["A", "Inbox/buy oat milk.md\n"]
    assert git(root, "show", "--name-status", "--format=", "HEAD").split("\t") == ["D", "Inbox/buy oat milk.md\n"]
    assert git(root, "status", "--porcelain").splitlines()[0] == " M Mine.md"  # the person's edit left to them
    assert git(root, "remote") == ""


async def test_a_vault_that_is_not_a_repository_gets_no_git(
    tmp_path: Path, make_app: Callable[..., Awaitable[App]]
) -> None:
    app = await make_app(vault={"git": True})
    await say(app, "buy oat milk")
    await GitHistory(app.db, app.notes.root).run()  # says so once and returns
    assert not (tmp_path / "vault" / ".git").exists()
