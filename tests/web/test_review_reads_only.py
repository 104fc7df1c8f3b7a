"""The review page reads only: its connection to the store cannot write, and while `vaultbot review`
serves, the process holds the store file itself open read-only."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from bot.db import ReadOnlyDatabase
from tests.helpers import run_inbox
from tests.web.test_review_serving import fetch, reviewing, stop

AppFactory = Callable[..., Awaitable[App]]


def store_descriptors(pid: int, store: Path) -> dict[str, list[int]]:
    """The access mode (os.O_RDONLY, O_WRONLY or O_RDWR) of each descriptor process ``pid`` holds
    on the store's files, by file name."""
    found: dict[str, list[int]] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:  # closed meanwhile
            continue
        if target.startswith(str(store)):
            flags = int(next(line.split()[1] for line in info.splitlines() if line.startswith("flags:")), 8)
            found.setdefault(Path(target).name, []).append(flags & os.O_ACCMODE)
    return found


async def test_while_vaultbot_review_serves_it_holds_the_store_file_read_only(
    make_app: AppFactory, tmp_path: Path
) -> None:
    # A store the bot is using: it runs beside the page, its log (-wal) full of its writes.
    store = (tmp_path / "data" / "vaultbot.db").resolve()
    app = await make_app(store={"path": store})
    for text in ("buy oat milk", "/note call the plumber"):
        message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=text)
        await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    assert Path(f"{store}-wal").exists()

    with reviewing(tmp_path) as (process, url):
        for path in ("/", "/runs", "/notes", "/usage", "/health"):
            status, body = fetch(url.replace("/?", f"{path}?"))
            assert status == 200, path
        assert "buy oat milk" in fetch(url.replace("/?", "/notes?"))[1]
        held = store_descriptors(process.pid, store)
        assert stop(process) == 0
    # The database file is held, and only for reading. SQLite opens the -wal (and -shm) of a
    # read-only connection for writing too, by design: readers mark in -shm where they read.
    assert held.get(store.name), held
    assert set(held[store.name]) == {os.O_RDONLY}, held


async def test_the_pages_connection_refuses_to_write(make_app: AppFactory) -> None:
    app = await make_app()
    reader = await ReadOnlyDatabase.open(app.settings.store.path)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await reader.fetchall("INSERT INTO review_token (id, token, created_at) VALUES (1, 'x', 'now')")
        assert await reader.fetchone("SELECT token FROM review_token") is None
    finally:
        await reader.close()
