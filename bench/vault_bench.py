"""Vault benchmark on a generated vault: index build, start-up, search, list and write.

    .venv/bin/python bench/vault_bench.py [--notes 10000] [--queries 200]

Notes are written straight to disk (as a person's existing vault would be), spread over folders,
with front matter, tags and 100-300 word bodies. Words follow a Zipf distribution over a 20,000-word
vocabulary, as real text does, so a query matches a realistic share of the notes.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vault import Vault  # noqa: E402

SYLLABLES = "ka lo mi ne ru sa ti vo de fa gu pe ri to ba ce".split()


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Zipf:
    """Draws words with frequency falling as 1/rank."""

    def __init__(self, words: list[str], rng: random.Random) -> None:
        self.words = words
        self.rng = rng
        self.weights = list(itertools.accumulate(1 / rank for rank in range(1, len(words) + 1)))

    def draw(self, k: int = 1) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.weights, k=k)


FOLDERS = ["Inbox", "Tasks", "Journal", "Projects/Home", "Projects/Work", "Reading", "People", "Ideas"]


def generate(root: Path, count: int, rng: random.Random, words: Zipf) -> None:
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        first, second, *tags = words.draw(4)
        title = f"{first.title()} {second} {i}"
        body = " ".join(words.draw(rng.randint(100, 300)))
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
    words = Zipf(vocabulary(rng), rng)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        started = time.perf_counter()
        generate(root, args.notes, rng, words)
        print(f"generated {args.notes} notes in {time.perf_counter() - started:.1f} s")

        started = time.perf_counter()
        Vault(root).close()
        print(f"{'cold index build':<34} {time.perf_counter() - started:8.2f} s")
        started = time.perf_counter()
        notes = Vault(root)
        print(f"{'start-up, unchanged vault':<34} {(time.perf_counter() - started) * 1000:8.1f} ms")

        with notes:
            # Searches are for words people remember: neither the commonest nor the rarest.
            middling = words.words[50:5000]
            queries = [" ".join(rng.sample(middling, rng.choice([1, 1, 2]))) for _ in range(args.queries)]
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
