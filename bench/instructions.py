"""Instructions per turn, counted by valgrind's callgrind: the figure that holds still on a shared host.

``bench/turns.py`` times turns, and on a shared virtual machine the same code can measure twice as slow
within the hour. Callgrind counts the instructions the process runs (every thread, the kernel's work
left out), so two trees compared this way differ by what their code does, not by what the host was doing:
repeated runs of one tree agree within 0.5 %. Each scenario runs in its own process under callgrind with
counting switched on (``callgrind_control``) only around the measured turns, after start-up and warm-up.

    .venv/bin/python bench/instructions.py [--turns 160]

Needs valgrind (Debian: ``apt-get install -y valgrind``). A run takes about two minutes: callgrind runs
the program some fifty times slower, so the turn counts are small and the latencies it would show are not.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.turns import CONCURRENT_CONVERSATIONS, plain, running, with_tools  # noqa: E402
from bot.app import App  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.fakes.scripted_model import ScriptedModel  # noqa: E402

MODELS = {"plain": plain, "tool": with_tools}
SCENARIOS = [("plain", 1), ("plain", CONCURRENT_CONVERSATIONS), ("tool", 1), ("tool", CONCURRENT_CONVERSATIONS)]


async def measured(kind: str, turns: int, conversations: int) -> None:
    """Run ``turns`` turns over ``conversations`` conversations with callgrind counting only them."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        settings = Settings(
            _env_file=None,
            vault={"path": folder / "vault", "search_by_meaning": False},
            store={"path": folder / "vaultbot.db"},
            bus={"concurrency": CONCURRENT_CONVERSATIONS},
        )
        app = await App.open(settings, model=ScriptedModel(MODELS[kind]))
        gc.freeze()
        try:
            async with running(app) as bench:
                for i in range(10):  # warm up
                    await bench.turn("warm", f"warm {i}")

                async def conversation(c: int) -> None:
                    for i in range(turns // conversations):
                        await bench.turn(f"c{c}", f"turn {c} {i}")

                _count(True)
                await asyncio.gather(*(conversation(c) for c in range(conversations)))
                _count(False)
        finally:
            await app.close()


def _count(on: bool) -> None:
    subprocess.run(
        ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], check=True, capture_output=True
    )


def instructions(kind: str, turns: int, conversations: int) -> float:
    """Millions of instructions per turn of one scenario, run under callgrind in a process of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={tmp}/callgrind.out",
                sys.executable,
                __file__,
                "--inner",
                kind,
                str(turns),
                str(conversations),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    collected = re.search(r"Collected : (\d+)", done.stderr)
    if collected is None:
        raise SystemExit(f"callgrind counted nothing:\n{done.stderr[-2000:]}")
    return int(collected.group(1)) / turns / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=160)
    parser.add_argument("--inner", nargs=3, metavar=("KIND", "TURNS", "CONVERSATIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        kind, turns, conversations = args.inner
        asyncio.run(measured(kind, int(turns), int(conversations)))
        return
    for kind, conversations in SCENARIOS:
        millions = instructions(kind, args.turns, conversations)
        print(f"{kind} turn, {conversations:>2} conversation(s): {millions:5.2f} M instructions per turn", flush=True)


if __name__ == "__main__":
    main()
