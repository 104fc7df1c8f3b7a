"""Matrix latency: a person's message sent to the homeserver → the bot's reply seen in the person's sync.

A real Synapse on 127.0.0.1 (the tests' own: tests/fakes/synapse.py, in .venv-synapse), the real Matrix
channel, runner, SQLite file and vault, and a zero-latency scripted model in-process, so the figure is what
Matrix adds to the model's own time: the homeserver's delivery to the bot's sync, storing, the turn, the
send, and the homeserver's delivery to the person's sync (the person long-polls as a client does).
Messages go one at a time, each after the previous reply came.

    .venv/bin/python bench/matrix_latency.py [--messages 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nio import AsyncClient, RoomCreateResponse, SyncResponse  # noqa: E402

from bot.app import App  # noqa: E402
from bot.channels.matrix import MatrixChannel  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.fakes.scripted_model import ScriptedModel, say  # noqa: E402
from tests.fakes.synapse import Synapse  # noqa: E402


async def measure(folder: Path, synapse: Synapse, count: int) -> list[float]:
    bot, ann = synapse.register(), synapse.register()
    settings = Settings(
        _env_file=None,
        vault={"path": folder / "vault", "search_by_meaning": False},
        store={"path": folder / "data" / "vaultbot.db"},
        matrix={"homeserver": synapse.url, "user_id": bot.user_id, "password": bot.password,
                "allowed_users": [ann.user_id]},
    )
    app = await App.open(settings, model=ScriptedModel(lambda messages: say("Noted.")))
    data = folder / "data"
    channel = MatrixChannel(settings.matrix, bus=app.bus, store=app.store, notes=app.notes, data=data)
    worker = app.runner_worker()
    tasks = [asyncio.create_task(channel.run()), asyncio.create_task(worker.run())]
    person = AsyncClient(synapse.url, ann.user_id)
    person.restore_login(ann.user_id, ann.device_id, ann.access_token)
    try:
        await channel.ready.wait()
        created = await person.room_create(is_direct=True, invite=[bot.user_id])
        assert isinstance(created, RoomCreateResponse)
        room = created.room_id
        token = await _until(person, None, lambda s: _joined(s, room, bot.user_id))
        took = []
        for n in range(count):
            started = time.perf_counter()
            await person.room_send(room, "m.room.message", {"msgtype": "m.text", "body": f"note number {n}"})
            token = await _until(person, token, lambda s: _replied(s, room, bot.user_id))
            took.append((time.perf_counter() - started) * 1000)
        return took
    finally:
        await person.close()
        await channel.stop()
        await worker.stop(5)
        await asyncio.gather(*tasks, return_exceptions=True)
        await app.close()


async def _until(person: AsyncClient, token: str | None, seen: object) -> str:
    while True:
        sync = await person.sync(timeout=30_000, since=token)
        assert isinstance(sync, SyncResponse), sync
        token = sync.next_batch
        if seen(sync):  # type: ignore[operator]
            return token


def _joined(sync: SyncResponse, room: str, bot: str) -> bool:
    joined = sync.rooms.join.get(room)
    return joined is not None and any(
        e.source.get("state_key") == bot and e.source.get("content", {}).get("membership") == "join"
        for e in [*joined.state, *joined.timeline.events]
    )


def _replied(sync: SyncResponse, room: str, bot: str) -> bool:
    joined = sync.rooms.join.get(room)
    return joined is not None and any(
        e.source.get("sender") == bot and e.source.get("type") == "m.room.message" for e in joined.timeline.events
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50)
    count = parser.parse_args().messages
    with tempfile.TemporaryDirectory() as scratch, Synapse(Path(scratch) / "synapse") as synapse:
        took = asyncio.run(measure(Path(scratch), synapse, count))
    cut = statistics.quantiles(took, n=20)
    print(f"{count} messages: p50 {statistics.median(took):.0f} ms, p95 {cut[18]:.0f} ms, max {max(took):.0f} ms")


if __name__ == "__main__":
    main()
