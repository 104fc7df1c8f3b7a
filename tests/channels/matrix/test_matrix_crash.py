"""`vaultbot run` on Matrix killed with SIGKILL mid-turn, then restarted: one note and one reply, and a
further restart redelivers nothing. Real processes, a real Synapse, the fake Messages API."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.channels.matrix.conftest import Person, eventually
from tests.channels.telegram_harness import RunVaultbot, bus_statuses, stop
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.synapse import Account, Synapse
from tests.helpers import SEVERAL_PROCESSES

pytestmark = SEVERAL_PROCESSES

WRITE = ("vault_write", {"folder": "Tasks", "title": "Water the plants", "content": "- [ ] water the plants"})
STEPS = [api.tool_use(WRITE), api.tool_use(("send_message", {"text": "Saved to Tasks."})), api.text("")]


def start(run: RunVaultbot, synapse: Synapse, bot: Account, person: Person, anthropic: FakeAnthropic) -> Any:
    return run(
        VAULTBOT_MATRIX__HOMESERVER=synapse.url,
        VAULTBOT_MATRIX__USER_ID=bot.user_id,
        VAULTBOT_MATRIX__PASSWORD=bot.password,
        VAULTBOT_MATRIX__ALLOWED_USERS=f'["{person.user_id}"]',
        ANTHROPIC_API_KEY="sk-ant-crash-test",
        ANTHROPIC_BASE_URL=anthropic.base_url,
        VAULTBOT_MODEL__SDK_MAX_RETRIES="0",
        VAULTBOT_BUS__LEASE_SECONDS="1",
    )


async def test_a_turn_killed_mid_way_gives_one_note_and_one_reply_after_restart(
    tmp_path: Path, synapse: Synapse, people: Any, fake_anthropic: FakeAnthropic, vaultbot_run: RunVaultbot
) -> None:
    ann: Person = await people()
    bot = await asyncio.to_thread(synapse.register)
    waiting, release = threading.Event(), threading.Event()

    def answer(body: dict[str, Any]) -> api.Canned:
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if step == 1 and not release.is_set():  # the note is written; the first process dies here
            waiting.set()
            release.wait(timeout=30)
        return STEPS[step]

    fake_anthropic.handler = answer
    first = start(vaultbot_run, synapse, bot, ann, fake_anthropic)
    room = await ann.direct_room(bot.user_id)
    await ann.say(room, "remind me to water the plants")
    await asyncio.to_thread(waiting.wait, 60)
    assert waiting.is_set(), "the turn never reached the model's second step"
    await asyncio.to_thread(stop, first, signal.SIGKILL)
    release.set()

    second = start(vaultbot_run, synapse, bot, ann, fake_anthropic)
    replies = await eventually(lambda: ann.messages(room, bot.user_id), "the reply after the restart", 60)
    db = tmp_path / "data" / "vaultbot.db"
    await eventually(lambda: _async(bus_statuses(db, "inbound") == ["done"]), "the message was finished", 60)
    errors = await asyncio.to_thread(stop, second, signal.SIGTERM)
    assert second.returncode == 0, errors
    assert bot.password not in errors and "sk-ant-crash-test" not in errors

    third = start(vaultbot_run, synapse, bot, ann, fake_anthropic)
    await eventually(lambda: _async(_synced_again(tmp_path, third)), "the restarted bot synced", 60)
    await asyncio.to_thread(stop, third, signal.SIGTERM)
    assert [r["body"] for r in await ann.messages(room, bot.user_id)] == ["Saved to Tasks."] == [
        r["body"] for r in replies
    ]
    assert bus_statuses(db, "inbound") == ["done"]
    assert len(list((tmp_path / "data" / "vault").rglob("*.md"))) == 1


def _synced_again(tmp_path: Path, process: subprocess.Popen[str]) -> bool:
    assert process.poll() is None
    return (tmp_path / "data" / "matrix" / "sync-token").stat().st_mtime > process_started(process)


def process_started(process: subprocess.Popen[str]) -> float:
    return Path(f"/proc/{process.pid}").stat().st_mtime


async def _async(value: bool) -> bool:
    return value
