"""Many writers into one folder at once (the runner writes from worker threads): nothing clobbered,
nothing doubled, every note indexed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from vault import Vault


def test_concurrent_creates_of_one_title_keep_every_note(notes: Vault) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: notes.write("Inbox", "Same", f"body {i}"), range(24)))

    paths = [r.path for r in results]
    assert len(set(paths)) == 24 and all(r.created for r in results)
    bodies = sorted(notes.read(path).content.strip() for path in paths)
    assert bodies == sorted(f"body {i}" for i in range(24))
    assert sorted(p.name for p in (notes.root / "Inbox").iterdir()) == sorted(Path(p).name for p in paths)
    assert len(notes.search("body", limit=100)) == 24


def test_concurrent_saves_of_the_same_note_make_one_note(notes: Vault) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: notes.write("Inbox", "Once", "the same text"), range(16)))

    assert {r.path for r in results} == {"Inbox/Once.md"}
    assert sum(r.created for r in results) == 1
    assert [p.name for p in (notes.root / "Inbox").iterdir()] == ["Once.md"]
