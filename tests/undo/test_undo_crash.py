"""A process killed with SIGKILL in the middle of ``/undo``: after the restart the run is undone once
and the chat is answered once."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.bus.test_crash import wait_for_file
from tests.fakes.scripted_model import ScriptedModel, call, say
from tests.helpers import outbox, run_inbox, subprocess_env

# The real app in capture mode (a command needs no model) handles the waiting /undo; the vault's
# take_back is wrapped so the process stops dead after the ``N``th change it took back.
UNDOER = textwrap.dedent(
    """
    import asyncio, sys, threading
    from pathlib import Path
    import vault.takeback
    from bot.app import App
    from bot.settings import Settings

    vault_path, store_path, stop_after, marker = sys.argv[1:5]
    real = vault.takeback.Reversible.take_back
    done = []

    def take_back(self, change, **options):
        outcome = real(self, change, **options)
        done.append(change.path)
        if len(done) == int(stop_after):
            Path(marker).write_text(",".join(done))
            threading.Event().wait()  # hang here until killed
        return outcome

    vault.takeback.Reversible.take_back = take_back

    async def main():
        settings = Settings(
            _env_file=None,
            vault={"path": vault_path, "search_by_meaning": False},
            store={"path": store_path},
            bus={"lease_seconds": 1},
        )
        async with await App.open(settings) as app:
            await app.runner_worker().run(burst=True)

    asyncio.run(main())
    """
)

AppFactory = Callable[..., Awaitable[App]]


# Two processes start the app and handle turns one after the other: on a loaded shared host that alone
# can take most of the default minute, so this test gets two (a hang still fails it).
@pytest.mark.timeout(120)
@pytest.mark.parametrize("stop_after", [1, 3])
async def test_an_undo_killed_midway_undoes_once_and_answers_once(
    make_app: AppFactory, tmp_path: Path, stop_after: int
) -> None:
    model = ScriptedModel()
    app = await make_app(model, bus={"lease_seconds": 1})
    model.enqueue(
        call(
            ("vault_write", {"folder": "Inbox", "title": "First", "content": "one"}),
            ("vault_write", {"folder": "Inbox", "title": "Second", "content": "two"}),
            ("vault_write", {"folder": "Lists", "title": "Third", "content": "three"}),
        ),
        say("Saved three."),
    )
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="three")
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    written = {p: (app.notes.root / p).read_bytes() for p in ("Inbox/First.md", "Inbox/Second.md", "Lists/Third.md")}
    undo = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="/undo")
    published = await app.bus.publish(INBOUND, undo, conversation=undo.conversation)

    marker = tmp_path / "stopped"
    settings = app.settings
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            UNDOER,
            str(settings.vault.path),
            str(settings.store.path),
            str(stop_after),
            str(marker),
        ],
        env=subprocess_env(),
        stderr=subprocess.PIPE,
    )
    try:
        await wait_for_file(marker, process, timeout=60)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        assert process.stderr is not None
        process.stderr.close()
    assert len(marker.read_text().split(",")) == stop_after
    assert await app.bus.status(published.id) == "leased"  # killed before the undo's end was stored

    async def answered() -> None:
        while await app.bus.status(published.id) != "done":
            await run_inbox(app)  # the lease runs out after a second; then the message is handled again
            await asyncio.sleep(0.05)

    await asyncio.wait_for(answered(), timeout=30)

    replies = [m.text for m in await outbox(app) if m.in_reply_to == undo.id]
    assert len(replies) == 1
    [told] = replies
    for path in written:
        assert f"• {path}: moved to .trash/{path}" in told
    for path, data in written.items():
        assert not (app.notes.root / path).exists()
        assert (app.notes.root / ".trash" / path).read_bytes() == data
    assert sorted(p.name for p in (app.notes.root / ".trash").rglob("*.md")) == ["First.md", "Second.md", "Third.md"]
    entries = [e for e in await app.store.list_interactions() if e["category"] == "undo"]
    assert len(entries) == 1
    undos = await app.db.fetchall("SELECT undo_run FROM undos")
    assert len(undos) == 1
    # The undo's own record is whole: putting it back restores all three.
    [again] = [m.text for m in await outbox(app) if m.in_reply_to == undo.id]
    redo_id = again.rsplit("`/undo ", 1)[1].split("`")[0]
    redo = InboundMessage(
        channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=f"/undo {redo_id}"
    )
    await app.bus.publish(INBOUND, redo, conversation=redo.conversation)
    await run_inbox(app)
    for path, data in written.items():
        assert (app.notes.root / path).read_bytes() == data
