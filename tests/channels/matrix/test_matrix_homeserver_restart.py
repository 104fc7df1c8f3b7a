"""The homeserver restarts under a running `vaultbot run`: the bot rides out the outage (its syncs fail and
are tried again), does not exit, and a message sent after the restart is answered exactly once. A homeserver
of the test's own (stopped and started again on the same port and data), so no other test loses its own."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.channels.matrix.conftest import Person, eventually
from tests.channels.telegram_harness import RunVaultbot, bus_statuses
from tests.fakes.synapse import Account, Synapse
from tests.helpers import SEVERAL_PROCESSES

pytestmark = SEVERAL_PROCESSES


@pytest.fixture
def synapse(tmp_path: Path) -> Iterator[Synapse]:
    with Synapse(tmp_path / "synapse") as server:
        yield server


class Log:
    """A process's standard error, read as it comes (so a full pipe never blocks the bot)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        stderr = process.stderr
        assert stderr is not None
        self._reader = threading.Thread(target=lambda: self.lines.extend(stderr), daemon=True)
        self._reader.start()

    def text(self) -> str:
        return "".join(self.lines)

    def join(self) -> str:
        self._reader.join(timeout=30)
        return self.text()


async def test_a_message_after_the_homeserver_restarted_is_answered_once_and_the_bot_stays_up(
    tmp_path: Path, synapse: Synapse, people: Any, vaultbot_run: RunVaultbot
) -> None:
    ann: Person = await people()
    bot: Account = await asyncio.to_thread(synapse.register)
    process = vaultbot_run(  # no API key: capture mode, each message filed and answered with where it went
        VAULTBOT_MATRIX__HOMESERVER=synapse.url,
        VAULTBOT_MATRIX__USER_ID=bot.user_id,
        VAULTBOT_MATRIX__PASSWORD=bot.password,
        VAULTBOT_MATRIX__ALLOWED_USERS=f'["{ann.user_id}"]',
    )
    log = Log(process)
    room = await ann.direct_room(bot.user_id)
    await ann.say(room, "call the plumber")
    await eventually(lambda: _replies(ann, room, bot.user_id, 1), "the first message was answered", 60)

    await asyncio.to_thread(synapse.close)
    await eventually(lambda: _async("matrix: sync failed" in log.text()), "the bot saw the homeserver go", 60)
    await asyncio.to_thread(synapse.start)  # the same port, database and media store

    await ann.say(room, "water the plants")
    await eventually(lambda: _replies(ann, room, bot.user_id, 2), "the message after the restart was answered", 90)
    await ann.say(room, "buy bread")  # answered after: any second answer to the one before would be in by now
    replies = await eventually(lambda: _replies(ann, room, bot.user_id, 3), "the next message was answered", 60)

    assert process.poll() is None, log.text()
    assert [r["body"].split(".md")[0] for r in replies] == [
        "Saved to Inbox/call the plumber",
        "Saved to Inbox/water the plants",
        "Saved to Inbox/buy bread",
    ]
    db = tmp_path / "data" / "vaultbot.db"
    await eventually(lambda: _async(bus_statuses(db, "inbound") == ["done"] * 3), "each message done once", 60)
    process.send_signal(signal.SIGTERM)
    await asyncio.to_thread(process.wait, 60)
    errors = log.join()
    assert process.returncode == 0, errors
    assert bot.password not in errors
    inbox = tmp_path / "data" / "vault" / "Inbox"
    assert sorted(p.name for p in inbox.iterdir()) == ["buy bread.md", "call the plumber.md", "water the plants.md"]


async def _replies(person: Person, room: str, bot: str, count: int) -> list[dict[str, Any]] | None:
    found = await person.messages(room, bot)
    return found if len(found) >= count else None


async def _async(value: bool) -> bool:
    return value
