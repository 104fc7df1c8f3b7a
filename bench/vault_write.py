"""Micro-benchmark of ``Vault.write`` (create) into one folder: one writer, then 16 threads at once.

Prints the wall time per write and the process's user and system CPU per write (all threads), which
are steadier than wall time on shared cores.

    .venv/bin/python bench/vault_write.py [--writes 1000] [--dir /var/tmp]

On some hosts creating a file costs 20 µs of kernel time in one directory and a millisecond in
another, and that changes by the hour (ext4's inode allocation): ``bench/turns.py``'s floor line
measures it. Compare runs made back to back, and say which directory a figure comes from.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vault import Vault  # noqa: E402

THREADS = 16


def measure(name: str, writes: int, run: Callable[[], None]) -> None:
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    run()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    user = (after.ru_utime - before.ru_utime) * 1000 / writes
    system = (after.ru_stime - before.ru_stime) * 1000 / writes
    print(
        f"{name:<12} {wall * 1000 / writes:6.3f} ms/write wall  {writes / wall:6.0f} writes/s  "
        f"cpu user {user:5.3f} + sys {system:5.3f} ms/write"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--dir", type=Path, help="where to put the vault (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp, Vault(Path(tmp) / "vault") as notes:
        for i in range(20):  # warm up: the folder, the index, the lock
            notes.write("Bench", f"warm {i}", "warm body", tags=["bench"])

        def sequential() -> None:
            for i in range(args.writes):
                notes.write("Bench", f"seq {i}", f"body of seq {i}", tags=["bench"])

        def one(i: int) -> None:
            notes.write("Bench", f"conc {i}", f"body of conc {i}", tags=["bench"])

        def concurrent() -> None:
            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(one, range(args.writes)))

        measure("sequential", args.writes, sequential)
        measure(f"{THREADS} threads", args.writes, concurrent)


if __name__ == "__main__":
    main()
