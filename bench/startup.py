"""Command start-up: how long the installed `vaultbot` command takes from its start to its exit, for the
commands a person runs many times a day (which need no model) and for capture mode's `chat` (no line, and
one line piped in, which files a note: search by meaning is on, and nothing waits for its models), the
largest memory each reached, and what the imports cost, package by package (Python's ``-X importtime``).

Each command runs in a fresh folder on a fresh store, with none of your settings (no key: capture mode),
``--rounds`` times; the table gives the median and the fastest wall time, the median CPU time (user and
system, which a busy shared host moves less than wall time), and the imports' share.

    .venv/bin/python bench/startup.py [--rounds 10] [--top 6]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VAULTBOT = Path(sys.executable).parent / "vaultbot"
COMMANDS: list[tuple[str, ...]] = [
    ("--help",),
    ("log",),
    ("runs",),
    ("usage",),
    ("retry",),  # nothing to retry
    ("mcp", "list"),  # no servers
    ("doctor",),
    ("chat",),
]
# What `chat` is given on its standard input; the other commands read none.
LINES = {("chat",): ["", "buy oat milk and the seed catalogue\n"]}
OWN_PREFIXES = ("VAULTBOT_", "ANTHROPIC_")


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(OWN_PREFIXES)}


def measured(folder: Path, command: tuple[str, ...], line: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and the largest resident memory (MiB) of one run of the command."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [str(VAULTBOT), *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=folder,
        env=environment(),
    )
    assert child.stdin is not None and child.stderr is not None
    child.stdin.write(line.encode())
    child.stdin.close()
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"vaultbot {' '.join(command)} failed ({child.returncode}): {errors[-1000:].decode()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def run(folder: Path, command: tuple[str, ...], *options: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*options, *command],
        input="",  # `chat` reads no line and exits: its start-up and its shutdown
        capture_output=True,
        text=True,
        cwd=folder,
        env=environment(),
        timeout=120,
    )
    if done.returncode != 0:
        raise SystemExit(f"vaultbot {' '.join(command)} failed ({done.returncode}): {done.stderr[-1000:]}")
    return done


def imports(folder: Path, command: tuple[str, ...]) -> tuple[float, collections.Counter[str]]:
    """Seconds spent importing, and each top-level package's own share of it."""
    done = run(folder, command, sys.executable, "-X", "importtime", "-m", "bot")
    packages: collections.Counter[str] = collections.Counter()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "imported package" not in line:
            own, _, name = line.removeprefix("import time:").split("|")
            packages[name.strip().split(".")[0]] += int(own) / 1e6
    return sum(packages.values()), packages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--top", type=int, default=6, help="packages shown per command")
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(
        f"{'command':<14} {'median':>8} {'fastest':>8} {'CPU':>8} {'memory':>8} {'imports':>8}  "
        "heaviest imports (own time, ms)"
    )
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        run(folder, ("log",), str(VAULTBOT))  # the store made and migrated once, as after a first start
        for command in COMMANDS:
            total, packages = imports(folder, command)
            heaviest = ", ".join(f"{name} {seconds * 1000:.0f}" for name, seconds in packages.most_common(args.top))
            for line in LINES.get(command, [""]):
                times, cpu, memory = zip(*(measured(folder, command, line) for _ in range(args.rounds)), strict=True)
                name = " ".join(command) + (" (a line)" if line else "")
                print(
                    f"{name:<14} {statistics.median(times) * 1000:>6.0f}ms {min(times) * 1000:>6.0f}ms "
                    f"{statistics.median(cpu) * 1000:>6.0f}ms {statistics.median(memory):>5.0f}MiB "
                    f"{total * 1000:>6.0f}ms  {heaviest}"
                )


if __name__ == "__main__":
    main()
