"""Voice notes: what transcription adds to the path, and that receiving does not wait on it.

The real python-telegram-bot against the fake Bot API, the real transcription client against the
fake speech-to-text API (zero latency: it answers at once), capture mode, a real SQLite file and
vault, all on 127.0.0.1. Each update comes from a new chat, so per-chat pacing stays out of the figures.

- voice update → transcription request at the service, → reply sent; and the transcription step
  itself as the run's audit trail records it (file read, HTTP request, transcript stored);
- text update → confirmed to Telegram (the receiving path), with the transcription service idle,
  then with it hung on a voice note.

    .venv/bin/python bench/voice.py [--updates 100]
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
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402
from tests.fakes.transcription_server import KEY, FakeTranscription  # noqa: E402


def voices(
    fake: FakeTelegram, speech: FakeTranscription, first_chat: int, updates: int, gap: float
) -> dict[str, list[float]]:
    """Push voice notes one by one from a thread, timing what the fake servers see."""
    heard: list[float] = []
    replied: list[float] = []
    for i in range(updates):
        time.sleep(gap)
        chat = first_chat + i
        fake.add_file(f"v{chat}", b"OggS" + bytes(16_000), file_path=f"voice/{chat}.oga")  # ~4 s of Opus
        before = len(speech.transcriptions())
        started = time.monotonic()
        fake.push_update(tg.voice_update(f"v{chat}", duration=4, file_size=16_004, user_id=42, chat_id=chat))
        fake.wait_for(lambda f, chat=chat: any(s["chat_id"] == chat for s in f.sent), timeout=30)
        replied.append((time.monotonic() - started) * 1000)
        [request] = speech.transcriptions()[before:]
        heard.append((request.at - started) * 1000)
    return {"voice update → request at the service": heard, "voice update → reply sent": replied}


def texts(fake: FakeTelegram, first_chat: int, updates: int, gap: float) -> list[float]:
    """Push text updates one by one; the time until Telegram is told each one was received."""
    confirmed: list[float] = []
    for i in range(updates):
        time.sleep(gap)
        started = time.perf_counter()
        update_id = fake.push_update(tg.text_update(f"note {i}", user_id=42, chat_id=first_chat + i))
        fake.wait_for(lambda f, update_id=update_id: f.confirmed_offset > update_id, timeout=30)
        confirmed.append((time.perf_counter() - started) * 1000)
    return confirmed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between updates")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeTelegram() as fake, FakeTranscription() as speech:
        settings = Settings(
            _env_file=None,
            vault={"path": Path(tmp) / "vault"},
            store={"path": Path(tmp) / "vaultbot.db"},
            telegram=fake.settings(),
            transcribe={"base_url": speech.base_url, "api_key": KEY},
        )
        app = await App.open(settings)  # capture mode: no model latency at all
        channel = TelegramChannel(settings.telegram, bus=app.bus, store=app.store, notes=app.notes, poll_timeout=10)
        worker = app.runner_worker()
        tasks = [asyncio.create_task(channel.run()), asyncio.create_task(worker.run())]
        try:
            await asyncio.to_thread(voices, fake, speech, 1_000, 10, args.gap)  # warm up
            figures = await asyncio.to_thread(voices, fake, speech, 10_000, args.updates, args.gap)
            figures["text update → confirmed (service idle)"] = await asyncio.to_thread(
                texts, fake, 20_000, args.updates, args.gap
            )
            speech.hang()
            fake.add_file("stuck", b"OggS-stuck", file_path="voice/stuck.oga")
            fake.push_update(tg.voice_update("stuck", duration=4, file_size=10, user_id=42, chat_id=30_000))
            figures["text update → confirmed (service hung)"] = await asyncio.to_thread(
                texts, fake, 40_000, args.updates, args.gap
            )
            rows = await app.db.fetchall("SELECT duration_ms FROM transcripts WHERE status = 'transcribed'")
            figures["transcription step (in the run)"] = [row["duration_ms"] for row in rows][10:]
            speech.release()
        finally:
            await channel.stop()
            await worker.stop(5)
            await asyncio.gather(*tasks)
            await app.close()
    for name, values in figures.items():
        q = statistics.quantiles(values, n=100)
        print(f"{name:<42} p50 {q[49]:7.2f} ms  p95 {q[94]:7.2f} ms  (n={len(values)})")


if __name__ == "__main__":
    threading.excepthook = lambda hook: print(hook.exc_value, file=sys.stderr)
    asyncio.run(main())
