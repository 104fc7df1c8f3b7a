"""A worker process killed with SIGKILL mid-message: the message is delivered again."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from bot.bus import Bus, Delivery, InboundMessage, Sender, Worker
from bot.db import Database
from tests.helpers import subprocess_env

WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from bot.bus import Bus, Worker
    from bot.db import Database

    async def main(db_path, marker):
        db = await Database.open(Path(db_path))
        async def handler(delivery):
            Path(marker).write_text(str(delivery.id))
            await asyncio.Event().wait()  # hang until killed
        await Worker(Bus(db), "in", handler, lease=1.0).run()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


async def wait_for_file(path: Path, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    async def poll() -> None:
        while not path.exists():
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


async def test_a_message_whose_worker_was_killed_is_redelivered_after_the_lease(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "bus.db")
    try:
        bus = Bus(db)
        message = InboundMessage(channel="test", conversation="c", sender=Sender(id="u"), text="survive me")
        published = await bus.publish("in", message, conversation="c")
        marker = tmp_path / "claimed"
        env = subprocess_env()
        process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tmp_path / "bus.db"), str(marker)], env=env, stderr=subprocess.PIPE
        )
        try:
            await wait_for_file(marker, process)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
            assert process.stderr is not None
            process.stderr.close()
        assert await bus.status(published.id) == "leased"

        redelivered: list[Delivery] = []
        done = asyncio.Event()

        async def handler(delivery: Delivery) -> None:
            redelivered.append(delivery)
            done.set()

        worker = Worker(bus, "in", handler, poll_interval=0.05)
        running = asyncio.create_task(worker.run())
        try:
            await asyncio.wait_for(done.wait(), timeout=30)
        finally:
            await worker.stop(grace=5)
            await running
        [delivery] = redelivered
        assert delivery.parse(InboundMessage).text == "survive me"
        assert delivery.attempts == 2
        assert await bus.status(published.id) == "done"
    finally:
        await db.close()
