"""Telegram latency: an update becoming available → the typing indicator, and → the reply sent.

The real python-telegram-bot against the fake Bot API server on 127.0.0.1, a zero-latency scripted
model in-process, a real SQLite file and vault. Each update comes from a new chat so that the
per-chat pacing (one message a second) does not enter the figures. Updates are spaced by --gap
seconds: back to back, ptb's rate limiter (Telegram's ~30 messages a second overall) is what
gets measured instead.

    .venv/bin/python bench/telegram_latency.py [--updates 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.app import App  # noqa: E402
from bot.channels.telegram import TelegramChannel  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.fakes import telegram_server as tg  # noqa: E402
from tests.fakes.scripted_model import ScriptedModel, say  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402


def drive(fake: FakeTelegram, updates: int, gap: float, typing: list[float], replies: list[float]) -> None:
    """Push updates one by one from a thread, timing what the fake server sees."""
    for i in range(updates):
        time.sleep(gap)
        chat = 10_000 + i
        started = time.perf_counter()
        fake.push_update(tg.text_update(f"note {i}", user_id=42, chat_id=chat))
        fake.wait_for(lambda f, chat=chat: any(a["chat_id"] == chat for a in f.actions), timeout=30)
        typing.append((time.perf_counter() - started) * 1000)
        fake.wait_for(lambda f, chat=chat: any(s["chat_id"] == chat for s in f.sent), timeout=30)
        replies.append((time.perf_counter() - started) * 1000)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between updates (0: back to back)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeTelegram() as fake:
        settings = Settings(
            _env_file=None,
            vault={"path": Path(tmp) / "vault"},
            store={"path": Path(tmp) / "vaultbot.db"},
            telegram=fake.settings(),
        )
        app = await App.open(settings, model=ScriptedModel(lambda messages: say("noted")))
        channel = TelegramChannel(settings.telegram, bus=app.bus, store=app.store, notes=app.notes, poll_timeout=10)
        worker = app.runner_worker()
        tasks = [asyncio.create_task(channel.run()), asyncio.create_task(worker.run())]
        typing: list[float] = []
        replies: list[float] = []
        try:
            await asyncio.to_thread(drive, fake, 20, args.gap, [], [])  # warm up
            await asyncio.to_thread(drive, fake, args.updates, args.gap, typing, replies)
        finally:
            await channel.stop()
            await worker.stop(5)
            await asyncio.gather(*tasks)
            await app.close()
    for name, values in (("update → typing", typing), ("update → reply sent", replies)):
        q = statistics.quantiles(values, n=100)
        print(f"{name:<20} p50 {q[49]:6.2f} ms  p95 {q[94]:6.2f} ms  (n={len(values)})")


if __name__ == "__main__":
    threading.excepthook = lambda hook: print(hook.exc_value, file=sys.stderr)
    asyncio.run(main())
