"""CPU a vault uses with nothing to do: search by meaning on (both models, as ``vaultbot run`` opens it),
after the first index is built.

    .venv/bin/python bench/idle.py [--notes 200] [--seconds 60]

Writes ``--notes`` notes (English and German) into a fresh vault, opens it with the embedders
``bot.startup.open_vault`` uses, waits until every note is embedded, then sleeps ``--seconds`` seconds and
prints the CPU seconds the process used meanwhile, in all its threads, and that per minute. Idle should be
~0; two embedding threads that woke each other used most of a core (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vault import EnglishEmbedder, MultilingualEmbedder, Vault  # noqa: E402

ENGLISH = "Note {n}: the meeting about the garden moved to Thursday; bring the seed catalogue and the receipts."
GERMAN = "Notiz {n}: Das Treffen zum Garten ist auf Donnerstag verschoben; bitte den Samenkatalog mitbringen."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to stay idle (60 s: a minute)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        for number in range(args.notes):
            folder = root / ("Notes" if number % 2 else "Notizen")
            folder.mkdir(parents=True, exist_ok=True)
            text = (ENGLISH if number % 2 else GERMAN).format(n=number)
            (folder / f"note {number}.md").write_text(text + "\n", encoding="utf-8")
        started = time.perf_counter()
        with Vault(root, embedder=MultilingualEmbedder(), english=EnglishEmbedder()) as notes:
            if not notes.wait_for_meaning(600):
                sys.exit("the first index was not built in 10 minutes")
            print(f"first index of {args.notes} notes: {time.perf_counter() - started:.1f} s")
            cpu, wall = time.process_time(), time.perf_counter()
            time.sleep(args.seconds)
            used, slept = time.process_time() - cpu, time.perf_counter() - wall
        print(f"idle {slept:.1f} s: {used:.3f} CPU-s, {used / slept * 60:.3f} CPU-s per minute")


if __name__ == "__main__":
    main()
