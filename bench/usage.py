"""`vaultbot usage` on a store with a long history: how long the command takes, all of it and a week.

    .venv/bin/python bench/usage.py [--runs 100000] [--days 365] [--rounds 5]

Makes a store with the project's own migrations, adds ``--runs`` runs' usage rows (two model calls a
run, two models) spread evenly over ``--days`` days up to now, then times the installed command, in a
fresh process each round, with no ``--since`` and with ``--since 7d``; the median and the fastest of
``--rounds`` (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.db import Database, to_iso  # noqa: E402

VAULTBOT = Path(sys.executable).parent / "vaultbot"


async def _migrated(path: Path) -> None:
    db = await Database.open(path)
    await db.close()


def fill(path: Path, runs: int, days: int) -> None:
    asyncio.run(_migrated(path))
    now = dt.datetime.now(dt.UTC)
    step = dt.timedelta(days=days) / runs
    # closing, then the transaction: sqlite3's own `with` commits but leaves the connection open.
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.executemany(
            "INSERT INTO usage (created_at, run_id, model, api_model, input_tokens, output_tokens, "
            "cache_read_tokens, cache_write_tokens, cost_usd) VALUES (?, ?, ?, ?, 1200, 300, 800, 0, 0.004)",
            (
                (to_iso(now - step * number), f"run-{number}", model, model)
                for number in range(runs)
                for model in ("claude-sonnet-4-5", "claude-haiku-4-5")
            ),
        )


def timed(folder: Path, store: Path, *options: str, rounds: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULTBOT_", "ANTHROPIC_"))}
    env["VAULTBOT_STORE__PATH"] = str(store)
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run([str(VAULTBOT), "usage", *options], cwd=folder, env=env, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        store = folder / "store.db"
        fill(store, args.runs, args.days)
        for options in [(), ("--since", "7d")]:
            samples = timed(folder, store, *options, rounds=args.rounds)
            name = " ".join(("usage", *options))
            print(
                f"{name:<18} median {statistics.median(samples) * 1000:6.0f} ms  fastest {min(samples) * 1000:6.0f} ms"
            )


if __name__ == "__main__":
    main()
