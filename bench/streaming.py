"""Streamed replies on Telegram: how soon the first draft shows, and how many drafts an answer gets.

The real Telegram channel, runner, anthropic SDK and python-telegram-bot in-process, against the
fake Messages API (streaming ``--tokens`` deltas of one word at ``--rate`` per second) and the fake
Bot API. For each answer it prints the time from the model's first token leaving the fake API to
the first draft reaching the fake Bot API, the number of drafts, and the time from the model's
last token to the real message.

    .venv/bin/python bench/streaming.py [--answers 5] [--tokens 150] [--rate 50] [--interval 1.0]
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

from bot.app import App  # noqa: E402
from bot.channels.telegram import TelegramChannel  # noqa: E402
from bot.runner import AnthropicModel  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.fakes import anthropic_server as api  # noqa: E402
from tests.fakes import telegram_server as tg  # noqa: E402


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=150, help="deltas of one word each per answer")
    parser.add_argument("--rate", type=float, default=50.0, help="deltas per second")
    parser.add_argument("--interval", type=float, default=1.0, help="VAULTBOT_TELEGRAM__DRAFT_INTERVAL")
    args = parser.parse_args()
    words = " ".join(f"w{i:03d}" for i in range(args.tokens))  # 4 characters + a space: one delta each
    first_token: list[float] = []
    last_token: list[float] = []

    def pace(index: int) -> None:
        if index == 0:
            first_token.append(time.monotonic())
        time.sleep(1 / args.rate)  # the model's speed, in the fake's thread
        if index == args.tokens - 1:
            last_token.append(time.monotonic())

    with tempfile.TemporaryDirectory() as tmp, api.FakeAnthropic() as anthropic, tg.FakeTelegram() as telegram:
        anthropic.handler = lambda body: api.streamed(api.text(words), delta_chars=5, pace=pace)
        settings = Settings(
            _env_file=None,
            vault={"path": Path(tmp) / "vault"},
            store={"path": Path(tmp) / "vaultbot.db"},
            telegram=telegram.settings(draft_interval=args.interval),
        )
        model = AnthropicModel(api_key="sk-ant-bench", base_url=anthropic.base_url, model="bench", max_tokens=4096)
        app = await App.open(settings, model=model)
        channel = TelegramChannel(
            settings.telegram, bus=app.bus, store=app.store, notes=app.notes, progress=app.progress, poll_timeout=1
        )
        worker = app.runner_worker()
        tasks = [asyncio.create_task(channel.run()), asyncio.create_task(worker.run())]
        rows = []
        try:
            for n in range(args.answers):
                drafts_before, sent_before = len(telegram.drafts), len(telegram.sent)
                telegram.push_update(tg.text_update(f"question {n}"))
                await telegram.await_for(lambda f, s=sent_before: len(f.sent) > s, timeout=120)
                sent_at = time.monotonic()
                drafts = telegram.drafts[drafts_before:]
                to_first = (drafts[0]["at"] - first_token[n]) * 1000 if drafts else float("nan")
                rows.append((to_first, len(drafts), (sent_at - last_token[n]) * 1000))
        finally:
            await channel.stop()
            await worker.stop(5)
            await asyncio.gather(*tasks, return_exceptions=True)
            await app.close()
    seconds = args.tokens / args.rate
    each = f"{args.tokens} tokens at {args.rate:.0f}/s ({seconds:.1f} s each)"
    print(f"{args.answers} answers of {each}, draft interval {args.interval}s")
    for to_first, drafts, to_final in rows:
        timing = f"first token → first draft {to_first:7.1f} ms   drafts {drafts:3d}"
        print(f"  {timing}   last token → message {to_final:7.1f} ms")
    print(
        f"median: first draft {statistics.median(r[0] for r in rows):.1f} ms, "
        f"{statistics.median(r[1] for r in rows):.0f} drafts per answer, "
        f"message {statistics.median(r[2] for r in rows):.1f} ms after the last token"
    )


if __name__ == "__main__":
    asyncio.run(main())
