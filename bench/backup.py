"""Backup of a vault the size of Obsidian's help vault (6,277 notes) with its store, and what a plain
turn costs while one runs.

Builds the vault (notes of the help vault's sizes, a few hundred KB of attachments) and fills the
store with turns through the real runner on a zero-latency scripted model, then:

- times ``take_backup`` (the store by SQLite's online backup, every file hashed and compressed) and
  prints the archive's size and the bytes it holds, and the time of ``--verify``;
- measures a plain turn's latency (inbound published → reply durable, as bench/turns.py does) while a
  backup runs in the same process, then as many turns right after it with none, a few times over.

    .venv/bin/python bench/backup.py [--notes 6277] [--turns 2000] [--rounds 3] [--dir /tmp/somewhere]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.turns import plain, running  # noqa: E402
from bot.app import App  # noqa: E402
from bot.backup import take_backup, verify  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.fakes.scripted_model import ScriptedModel  # noqa: E402

WORDS = "the note vault link graph canvas plugin sync publish theme folder heading embed tag query".split()


def build_vault(root: Path, notes: int) -> int:
    """``notes`` notes in 40 folders (sizes spread like the help vault's: most 1-4 KB, a few 20 KB) and
    20 attachments; returns the bytes written."""
    rng = random.Random(7)
    written = 0
    for n in range(notes):
        folder = root / f"Topic {n % 40}"
        folder.mkdir(parents=True, exist_ok=True)
        words = rng.choice([150, 300, 500, 800, 3000])
        body = " ".join(rng.choice(WORDS) for _ in range(words))
        text = f"---\ntags: [help]\n---\n# Note {n}\n\n{body}\n\nSee [[Note {rng.randrange(notes)}]].\n"
        (folder / f"Note {n}.md").write_text(text)
        written += len(text)
    attachments = root / "Attachments"
    attachments.mkdir(exist_ok=True)
    for n in range(20):
        data = rng.randbytes(150_000)  # images do not compress
        (attachments / f"image {n}.png").write_bytes(data)
        written += len(data)
    return written


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100)[p - 1] if len(values) > 1 else values[0]


async def turns(app: App, n: int, label: str) -> list[float]:
    async with running(app) as bench:
        return [await bench.turn(label, f"{label} {i}") for i in range(n)]


async def compare(app: App, settings: Settings, root: Path, rounds: int) -> tuple[list[float], list[float]]:
    """Plain turns while a backup runs, then as many with none, ``rounds`` times over."""
    quiet: list[float] = []
    busy: list[float] = []
    async with running(app) as bench:
        for r in range(rounds):
            backing = asyncio.create_task(take_backup(settings, root / "backups", datetime.now(UTC)))
            during: list[float] = []
            while not backing.done():
                during.append(await bench.turn("busy", f"busy {r} {len(during)}"))
            (await backing).path.unlink()
            busy += during
            quiet += [await bench.turn("quiet", f"quiet {r} {i}") for i in range(len(during))]
    return quiet, busy


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=6277)
    parser.add_argument("--turns", type=int, default=2000, help="turns filling the store before the backup")
    parser.add_argument("--rounds", type=int, default=3, help="backups with turns measured during and after each")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        root = args.dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vaultbot-bench-backup-")))
        started = time.perf_counter()
        size = build_vault(root / "vault", args.notes)
        built = time.perf_counter() - started
        print(f"vault: {args.notes} notes and 20 attachments, {size / 1e6:.1f} MB, built in {built:.1f} s")
        settings = Settings(
            _env_file=None,
            vault={"path": root / "vault", "search_by_meaning": False},
            store={"path": root / "vaultbot.db"},
        )
        app = await App.open(settings, model=ScriptedModel(plain))
        try:
            await turns(app, args.turns, "fill")
            store = settings.store.path.stat().st_size
            print(f"store: {args.turns} turns, {store / 1e6:.1f} MB")
            cpu = time.process_time()  # every thread's: the figure a shared host cannot move much
            backup = await take_backup(settings, root / "backups", datetime.now(UTC))
            print(f"backup: {backup.describe()} CPU {time.process_time() - cpu:.2f} s (all threads)")
            started = time.perf_counter()
            await verify(backup.path)
            print(f"verify: {time.perf_counter() - started:.2f} s")

            quiet, busy = await compare(app, settings, root, args.rounds)
        finally:
            await app.close()
    for label, values in (("no backup", quiet), ("during backups", busy)):
        p50, p95 = statistics.median(values), pct(values, 95)
        print(f"plain turn, {label:<15} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  ({len(values)} turns)")
    print(f"({args.rounds} backups, each with as many quiet turns right after it, so the machine's load is shared)")


if __name__ == "__main__":
    asyncio.run(main())
