"""End-to-end turn benchmark with a zero-latency scripted model in-process.

Measures the project's own cost of a turn: inbound published → run → reply durable in the outbox
→ inbound acked, on a real SQLite file and a real vault folder. Prints p50/p95 latency and turns
per second and the process's CPU time per turn, sequentially and over 16 concurrent conversations,
beside the cost of one raw SQLite WAL commit, one fsync, one file creation and one trip to aiosqlite's
thread, measured in the same directory in the same run.

    .venv/bin/python bench/turns.py [--turns 500] [--dir /tmp/somewhere]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiosqlite

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.app import App  # noqa: E402
from bot.bus import INBOUND, InboundMessage, Sender  # noqa: E402
from bot.runner import ModelReply  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.fakes.scripted_model import ScriptedModel, call, say  # noqa: E402

CONCURRENT_CONVERSATIONS = 16
# Search by meaning embeds each written note on a thread of its own (bench/recall.py measures it);
# off unless --meaning, so the figures are the turn's own cost, comparable with DESIGN's targets.
MEANING = "--meaning" in sys.argv


def plain(messages: list[dict[str, Any]]) -> ModelReply:
    """Answer with text at once: the reply is the run's final text."""
    return say("noted")


def with_tools(messages: list[dict[str, Any]]) -> ModelReply:
    """vault_write + log_interaction + send_message in one response, then end the turn."""
    last = messages[-1]["content"]
    if not isinstance(last, str):
        return say("")
    return call(
        ("vault_write", {"folder": "Bench", "title": last, "content": f"body of {last}", "tags": ["bench"]}),
        ("log_interaction", {"summary": f"filed {last}", "category": "note"}),
        ("send_message", {"text": f"Saved {last}"}),
    )


# The event loop runs the runner; the executor's threads run the vault (asyncio.to_thread);
# aiosqlite's thread (named after its function) runs the database connection.
_THREAD_LABELS = {"MainThread": "loop", "asyncio": "executor", "(_connection_worker_thread)": "aiosqlite"}


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) used so far by each live thread of this process, by thread name
    (Linux ``/proc``; empty elsewhere). Threads of one name (the vault's executor workers) are summed."""
    names = {str(t.native_id): t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/self/task/{tid}/stat").read_text().rpartition(")")[2].split()
                # Executor workers are named ``asyncio_0``, ``asyncio_1``…: one row for all of them.
                name = names.get(tid, "other").rstrip("0123456789").rstrip("_")
                name = _THREAD_LABELS.get(name.rpartition(" ")[2], name)
                used[name] = used.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return used


def per_thread(before: dict[str, float], after: dict[str, float], turns: int) -> str:
    """CPU ms per turn of each thread that used any, busiest first: which thread pays for a turn."""
    spent = {name: (after[name] - before.get(name, 0.0)) * 1000 / turns for name in after}
    return "  ".join(f"{name} {ms:.2f}" for name, ms in sorted(spent.items(), key=lambda kv: -kv[1]) if ms >= 0.005)


class Completions:
    """Tells each waiting turn when its inbound message is done, with one query per change of the
    inbound topic however many turns wait (a status query per waiter and change would cost the
    benchmark itself more with every conversation added)."""

    def __init__(self, app: App) -> None:
        self._app = app
        self._waiting: dict[int, asyncio.Future[float]] = {}

    async def turn(self, conversation: str, text: str) -> float:
        """One turn, in milliseconds from publish to the inbound message being done."""
        message = InboundMessage(channel="bench", conversation=conversation, sender=Sender(id="b"), text=text)
        started = time.perf_counter()
        published = await self._app.bus.publish(INBOUND, message, conversation=conversation)
        # Registered before anything else runs: the message cannot be done before this line.
        done = self._waiting[published.id] = asyncio.get_running_loop().create_future()
        return (await done - started) * 1000

    async def watch(self) -> None:
        """Resolve the waiting turns whose messages are done; runs until cancelled."""
        with self._app.bus.listen(INBOUND) as changed:
            while True:
                await changed.wait()
                changed.clear()
                if not self._waiting:
                    continue
                ids = list(self._waiting)
                rows = await self._app.db.fetchall(
                    f"SELECT id FROM bus_messages WHERE status = 'done' AND id IN ({', '.join('?' * len(ids))})", ids
                )
                finished = time.perf_counter()
                for row in rows:
                    self._waiting.pop(row["id"]).set_result(finished)


@contextlib.asynccontextmanager
async def running(app: App) -> AsyncIterator[Completions]:
    """The runner worker and the completion watcher, for the duration of the block."""
    worker = app.runner_worker()
    completions = Completions(app)
    tasks = [asyncio.create_task(worker.run()), asyncio.create_task(completions.watch())]
    try:
        yield completions
    finally:
        tasks[1].cancel()
        await worker.stop(5)
        await asyncio.gather(*tasks, return_exceptions=True)


async def scenario(root: Path, name: str, model: Callable[[list[dict[str, Any]]], ModelReply], turns: int) -> None:
    folder = root / name
    settings = Settings(
        _env_file=None,
        vault={"path": folder / "vault", "search_by_meaning": MEANING},
        store={"path": folder / "vaultbot.db"},
        bus={"concurrency": CONCURRENT_CONVERSATIONS},
    )
    app = await App.open(settings, model=ScriptedModel(model))
    gc.freeze()  # as `vaultbot run` does once started (bot.cli._settle_heap)
    try:
        async with running(app) as bench:
            for i in range(20):  # warm up
                await bench.turn("warm", f"warm {i}")
            started, cpu, threads = time.perf_counter(), time.process_time(), thread_cpu()
            sequential = [await bench.turn("seq", f"seq {i}") for i in range(turns)]
            seq_rate = turns / (time.perf_counter() - started)
            seq_cpu = (time.process_time() - cpu) * 1000 / turns
            seq_threads = per_thread(threads, thread_cpu(), turns)

            per_conversation = max(1, turns // CONCURRENT_CONVERSATIONS)

            async def conversation(c: int) -> list[float]:
                return [await bench.turn(f"conc-{c}", f"conc {c} {i}") for i in range(per_conversation)]

            started, cpu, threads = time.perf_counter(), time.process_time(), thread_cpu()
            results = await asyncio.gather(*(conversation(c) for c in range(CONCURRENT_CONVERSATIONS)))
            conc_rate = per_conversation * CONCURRENT_CONVERSATIONS / (time.perf_counter() - started)
            conc_cpu = (time.process_time() - cpu) * 1000 / (per_conversation * CONCURRENT_CONVERSATIONS)
            conc_threads = per_thread(threads, thread_cpu(), per_conversation * CONCURRENT_CONVERSATIONS)
            concurrent = [ms for r in results for ms in r]
    finally:
        await app.close()
    print(f"{name:<11} sequential        {summary(sequential, seq_rate, seq_cpu)}")
    print(f"{'':<11}   cpu ms/turn by thread: {seq_threads}")
    print(f"{name:<11} {CONCURRENT_CONVERSATIONS} conversations  {summary(concurrent, conc_rate, conc_cpu)}")
    print(f"{'':<11}   cpu ms/turn by thread: {conc_threads}")


async def history_scenario(root: Path, lengths: tuple[int, ...] = (10, 1_000, 10_000), turns: int = 200) -> None:
    """A plain turn in a conversation that already has ``length`` turns: the cost must not grow."""
    for length in lengths:
        folder = root / f"history-{length}"
        settings = Settings(
            _env_file=None,
            vault={"path": folder / "vault", "search_by_meaning": MEANING},
            store={"path": folder / "vaultbot.db"},
        )
        app = await App.open(settings, model=ScriptedModel(plain))
        gc.freeze()  # as `vaultbot run` does once started (bot.cli._settle_heap)
        past = json.dumps([{"role": "user", "content": "old"}, {"role": "assistant", "content": "reply"}])
        await app.db.executemany(
            "INSERT INTO turns (conversation, inbound_id, messages, created_at) VALUES ('long', ?, ?, '')",
            [(f"old-{i}", past) for i in range(length)],
        )
        try:
            async with running(app) as bench:
                latencies = [await bench.turn("long", f"new {i}") for i in range(turns)]
        finally:
            await app.close()
        print(f"history {length:>6} turns  p50 {pct(latencies, 50):6.2f} ms  p95 {pct(latencies, 95):6.2f} ms")


def summary(latencies: list[float], rate: float, cpu_ms: float) -> str:
    # CPU per turn (all threads) is the steadier figure when other programs share the cores.
    latency = f"p50 {pct(latencies, 50):6.2f} ms  p95 {pct(latencies, 95):6.2f} ms"
    return f"{latency}  {rate:6.0f} turns/s  cpu {cpu_ms:5.2f} ms/turn"


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100)[p - 1]


def floor(root: Path, n: int = 500) -> None:
    """The physical floor, in ms: one raw WAL commit (synchronous=NORMAL), one fsync, and creating one empty file."""
    conn = sqlite3.connect(root / "floor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE t (x TEXT)")
    started = time.perf_counter()
    for i in range(n):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?)", (str(i),))
        conn.execute("COMMIT")
    commit_ms = (time.perf_counter() - started) * 1000 / n
    conn.close()
    fd = os.open(root / "fsync.bin", os.O_WRONLY | os.O_CREAT)
    started = time.perf_counter()
    for _ in range(n // 5):
        os.write(fd, b"x" * 512)
        os.fsync(fd)
    fsync_ms = (time.perf_counter() - started) * 1000 / (n // 5)
    os.close(fd)
    # Every note is a new file, and on some hosts creating one costs a millisecond of kernel time in
    # one directory and 20 µs in another (ext4's inode allocation): this tells a slow disk from slow code.
    files = root / "creates"
    files.mkdir()
    started, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        os.close(os.open(files / str(i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    create_ms = (time.perf_counter() - started) * 1000 / n
    create_cpu_ms = (time.process_time() - cpu) * 1000 / n
    print(
        f"floor       one SQLite WAL commit {commit_ms:.3f} ms   one fsync {fsync_ms:.3f} ms   "
        f"one file created {create_ms:.3f} ms (cpu {create_cpu_ms:.3f} ms)"
    )


async def trip_floor(root: Path, n: int = 2000) -> None:
    """The cost of one trip to aiosqlite's thread and back, in ms of wall and CPU time (``SELECT 1``):
    awaited one at a time, the thread sleeps between trips and each is woken; 16 tasks at once keep
    its queue full. On a virtual machine a wake-up of a thread on the other core can cost several
    times the statement: this tells such a host from slow code."""
    conn = await aiosqlite.connect(root / "floor.db", isolation_level=None)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        for _ in range(n):
            await conn.execute("SELECT 1")
        alone, alone_cpu = ((time.perf_counter() - started) * 1000 / n, (time.process_time() - cpu) * 1000 / n)

        async def sixteenth() -> None:
            for _ in range(n // 16):
                await conn.execute("SELECT 1")

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(sixteenth() for _ in range(16)))
        full, full_cpu = ((time.perf_counter() - started) * 1000 / n, (time.process_time() - cpu) * 1000 / n)
    finally:
        await conn.close()
    print(
        f"floor       one trip to aiosqlite's thread {alone:.3f} ms (cpu {alone_cpu:.3f} ms), "
        f"16 at once {full:.3f} ms (cpu {full_cpu:.3f} ms) each"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--dir", type=Path, help="where to put the databases and vaults (default: a temp dir)")
    parser.add_argument("--meaning", action="store_true", help="search by meaning on (each note embedded)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        floor(root)
        await trip_floor(root)
        await scenario(root, "plain turn", plain, args.turns)
        await scenario(root, "tool turn", with_tools, args.turns)
        await history_scenario(root)


if __name__ == "__main__":
    asyncio.run(main())
