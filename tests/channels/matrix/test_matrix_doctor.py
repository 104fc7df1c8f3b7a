"""`vaultbot doctor` on the Matrix channel: the login (leaving no device behind) and the room with each
allowlisted person; it never shows the password."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

from tests.channels.matrix.conftest import Person, eventually
from tests.fakes.synapse import Synapse
from tests.test_doctor_cli import doctor


def lines(done: subprocess.CompletedProcess[str], prefix: str) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.split(None, 1)[-1].startswith(prefix)]


async def test_doctor_says_the_login_works_and_which_room_is_served(
    tmp_path: Path, synapse: Synapse, people: Any, serve: Any
) -> None:
    ann: Person = await people()
    bob: Person = await people()
    served = await serve([ann.user_id])
    room = await ann.direct_room(served.bot.user_id)
    await eventually(lambda: _joined(ann, room, served.bot.user_id), "the bot joined")
    await serve.stop_all()
    bot = served.bot
    env = {
        "VAULTBOT_MATRIX__HOMESERVER": synapse.url,
        "VAULTBOT_MATRIX__USER_ID": bot.user_id,
        "VAULTBOT_MATRIX__PASSWORD": bot.password,
        "VAULTBOT_MATRIX__ALLOWED_USERS": f'["{ann.user_id}", "{bob.user_id}"]',
    }
    devices = await _devices(synapse, bot)
    done = await asyncio.to_thread(doctor, tmp_path, **env)
    [login] = lines(done, "matrix:")
    assert login.startswith("ok ") and "the password logs in" in login
    rooms = lines(done, "matrix rooms:")
    assert any(line.startswith("ok ") and room in line and ann.user_id in line for line in rooms)
    assert any(line.startswith("FAIL") or "no room with" in line for line in rooms if bob.user_id in line)
    assert bot.password not in done.stdout + done.stderr
    assert await _devices(synapse, bot) == devices  # logged in and out again: no device left behind

    wrong = await asyncio.to_thread(doctor, tmp_path, **{**env, "VAULTBOT_MATRIX__PASSWORD": "not-it-Yy7"})
    assert wrong.returncode != 0
    [refused] = lines(wrong, "matrix:")
    assert "refused the login" in refused and "not-it-Yy7" not in wrong.stdout + wrong.stderr


async def _joined(person: Person, room: str, user: str) -> bool:
    return (await person.members(room)).get(user) == "join"


async def _devices(synapse: Synapse, who: Any) -> list[str]:
    answer = await asyncio.to_thread(synapse.request, "GET", "/_matrix/client/v3/devices", None, who)
    return sorted(d["device_id"] for d in answer["devices"])
