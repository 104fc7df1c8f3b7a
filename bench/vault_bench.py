"""Vault benchmark on a generated vault: index build, start-up, search, list and write.

    .venv/bin/python bench/vault_bench.py [--notes 10000] [--queries 200]

Notes are written straight to disk (as a person's existing vault would be), spread over folders,
with front matter, tags and 100-300 word bodies.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vault import Vault  # noqa: E402

WORDS = (
    "garden invoice river meeting plumber budget recipe travel paper guitar tomato museum lecture "
    "bicycle harbour winter letter project sketch coffee market doctor holiday camera library "
    "kitchen window mountain yoga piano chapter train ticket birthday garage painting novel"
).split()
FOLDERS = ["Inbox", "Tasks", "Journal", "Projects/Home", "Projects/Work", "Reading", "People", "Ideas"]


def generate(root: Path, count: int, rng: random.Random) -> None:
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        title = f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i}"
        tags = rng.sample(WORDS, 2)
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(100, 300)))
        updated = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z"
        text = f"---\ntitle: {title}\ntags: [{', '.join(tags)}]\nupdated: {updated}\n---\n\n{body}\n"
        (root / rng.choice(FOLDERS) / f"{title}.md").write_text(text, encoding="utf-8")


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def report(name: str, samples: list[float]) -> None:
    q = statistics.quantiles(samples, n=100) if len(samples) > 1 else samples * 100
    print(f"{name:<34} p50 {q[49]:8.2f} ms  p95 {q[94]:8.2f} ms  (n={len(samples)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        started = time.perf_counter()
        generate(root, args.notes, rng)
        print(f"generated {args.notes} notes in {time.perf_counter() - started:.1f} s")

        started = time.perf_counter()
        Vault(root).close()
        print(f"{'cold index build':<34} {time.perf_counter() - started:8.2f} s")
        started = time.perf_counter()
        notes = Vault(root)
        print(f"{'start-up, unchanged vault':<34} {(time.perf_counter() - started) * 1000:8.1f} ms")

        with notes:
            queries = [" ".join(rng.sample(WORDS, rng.choice([1, 1, 2]))) for _ in range(args.queries)]
            it = iter(queries * 2)
            report("search (index at most 1 s stale)", timed(lambda: notes.search(next(it)), args.queries))
            report("full disk check (sync)", timed(notes.sync, 20))
            report("list a folder (limit 50)", timed(lambda: notes.list(rng.choice(FOLDERS)), args.queries))
            counter = iter(range(10**9))
            report(
                "write a new note",
                timed(lambda: notes.write("Bench", f"bench note {next(counter)}", "some text", tags=["b"]), 200),
            )


if __name__ == "__main__":
    main()
