"""The meaning index's thread as a person notices it: closing never waits for a model to load, and a first
build embeds the notes most recently changed first. Real model, real folders, real SQLite files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tests.vault.embedders import WAIT, Counting
from vault import Vault


class SlowToLoad(Counting):
    """A real model whose loading takes until the test lets it finish."""

    def __init__(self) -> None:
        super().__init__()
        self.loading = threading.Event()
        self.gate = threading.Event()

    def load(self) -> None:
        self.loading.set()
        assert self.gate.wait(WAIT), "the test never let the model load"
        super().load()


def test_closing_a_vault_does_not_wait_for_its_model_to_load(tmp_path: Path) -> None:
    # `vaultbot chat` with one line piped in files a note and closes: it never needs the model.
    slow = SlowToLoad()
    vault = Vault(tmp_path / "vault", embedder=slow)
    written = vault.write("Inbox", "Milk", "Buy oat milk and the seed catalogue.")
    assert slow.loading.wait(WAIT)
    thread = vault._recall._thread  # type: ignore[union-attr]
    closer = threading.Thread(target=vault.close)
    closer.start()
    closer.join(WAIT)
    try:
        assert not closer.is_alive(), "close() waited for the model to load"
    finally:
        slow.gate.set()
    # Once loaded, the abandoned thread closes its files and ends without embedding anything.
    assert thread is not None
    thread.join(WAIT)
    assert not thread.is_alive() and slow.texts == []
    with Vault(tmp_path / "vault", embedder=Counting()) as again:
        assert again.wait_for_meaning(WAIT)
        assert [hit.path for hit in again.search("buying drinks for breakfast")][0] == written.path


def test_a_first_build_embeds_the_most_recently_changed_notes_first(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    ages = {"Archive/Old plans.md": 300, "Inbox/Today.md": 1, "Journal/Last week.md": 7, "Old.md": 400}
    for rel, days in ages.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"Written {days} days ago.\n")
        moment = path.stat().st_mtime - days * 86400
        os.utime(path, (moment, moment))
    embedder = Counting()
    with Vault(root, embedder=embedder) as vault:
        assert vault.wait_for_meaning(WAIT)
    titles = [text.split("\n", 1)[0] for text in embedder.texts]
    assert titles == ["Today", "Last week", "Old plans", "Old"]
