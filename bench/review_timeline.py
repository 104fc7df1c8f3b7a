"""How long the review page's timeline takes on a big store: generates N interactions (default
100,000), each with a run and its steps (a model call, a vault_write, a log_interaction), then
times whole HTTP requests to the real app (uvicorn on 127.0.0.1, the token cookie) for the first
page, a deep page, a search, filters, a run's page, and the notes list.

    .venv/bin/python bench/review_timeline.py [--interactions 100000] [--requests 30] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.db import Database  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.web import ReviewServer, review_page, review_token  # noqa: E402

WORDS = "milk passport dentist garden shed sourdough invoice birthday train lisbon review idea call book".split()
CATEGORIES = ["task", "note", "question", "link", "idea", "capture"]


def generate(path: Path, count: int) -> None:
    """Fill the store the way runs do, in bulk (the migration's triggers keep the search index)."""
    rng = random.Random(7)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    conn = sqlite3.connect(path)
    runs, steps, interactions = [], [], []
    for i in range(count):
        at = (start + timedelta(minutes=3 * i)).isoformat(timespec="microseconds")
        run_id = f"{i:032x}"
        conversation = f"telegram:{1000 + i % 7}"
        words = " ".join(rng.choice(WORDS) for _ in range(6))
        note = {"success": True, "path": f"Inbox/{words[:30]} {i}.md"}
        usage = {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 900}
        runs.append((run_id, conversation, f"in-{i}", "claude-sonnet-5", "assistant", "completed", "{}", "[]", at, at))
        steps += [
            (run_id, 0, "model", "claude-sonnet-5", "{}", "{}", 0, 1.0, json.dumps(usage), at),
            (run_id, 1, "tool", "vault_write", json.dumps({"title": words}), json.dumps(note), 0, 1.0, None, at),
            (run_id, 2, "tool", "log_interaction", "{}", "{}", 0, 1.0, None, at),
        ]
        category = rng.choice(CATEGORIES)
        interactions.append((at, conversation, category, f"Filed a {category}: {words}", run_id))
    conn.executemany(
        "INSERT INTO runs (id, conversation, inbound_id, model, mode, status, usage, tools_called, started_at, "
        "finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        runs,
    )
    conn.executemany(
        "INSERT INTO steps (run_id, idx, kind, name, input, output, is_error, duration_ms, usage, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        steps,
    )
    conn.executemany(
        "INSERT INTO interactions (created_at, conversation, category, summary, run_id) VALUES (?, ?, ?, ?, ?)",
        interactions,
    )
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()


def _cookie(url: str) -> str:
    with urllib.request.urlopen(url) as first:
        return str(first.headers["set-cookie"]).split(";")[0]


def timed(url: str, cookie: str, requests: int) -> tuple[float, float, int]:
    """p50 and p95 in ms of whole GET requests, and the page's size."""
    times, size = [], 0
    for _ in range(requests):
        request = urllib.request.Request(url, headers={"Cookie": cookie})
        began = time.perf_counter()
        with urllib.request.urlopen(request) as response:
            size = len(response.read())
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1], size


async def bench(folder: Path, count: int, requests: int) -> None:
    store = folder / "vaultbot.db"
    fresh = not store.exists()
    db = await Database.open(store)  # creates and migrates the schema
    try:
        if fresh:
            began = time.perf_counter()
            await asyncio.to_thread(generate, store, count)
            print(f"generated {count:,} interactions with their runs in {time.perf_counter() - began:.1f} s")
        settings = Settings(_env_file=None, vault={"path": folder / "vault"}, store={"path": store})
        token = await review_token(settings, db)
        async with review_page(settings, token) as page:
            server = ReviewServer(page, "127.0.0.1", 0)
            stop = asyncio.Event()
            serving = asyncio.create_task(server.serve(stop))
            base = f"http://127.0.0.1:{server.port}"
            try:
                cookie = await asyncio.to_thread(_cookie, server.url(token))
                deep = count // 2
                cases = {
                    "timeline, first page": "/",
                    "timeline, a page halfway back": f"/?before={deep}",
                    "search (one word, many hits)": "/?q=passport",
                    "search (three words)": "/?q=garden+shed+lisbon",
                    "search (no hits)": "/?q=zebra",
                    "filter: category + conversation": "/?category=idea&conversation=telegram:1003",
                    "filter: date range": "/?since=2026-03-01&until=2026-03-02",
                    "filter: run status (rare)": "/?status=failed",
                    "a run's page": f"/runs/{deep:032x}",
                    "notes, first page": "/notes",
                    "notes, JSON twin": "/notes?format=json",
                    "JSON twin of the first page": "/?format=json",
                }
                print(f"{'page':34} {'p50 ms':>8} {'p95 ms':>8} {'bytes':>8}   ({requests} requests each)")
                for name, path in cases.items():
                    p50, p95, size = await asyncio.to_thread(timed, base + path, cookie, requests)
                    print(f"{name:34} {p50:8.1f} {p95:8.1f} {size:8,}")
            finally:
                stop.set()
                await serving
    finally:
        await db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interactions", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--keep", type=Path, help="Keep (or reuse) the generated store in this folder.")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        asyncio.run(bench(args.keep, args.interactions, args.requests))
        return
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(bench(Path(folder), args.interactions, args.requests))


if __name__ == "__main__":
    main()
