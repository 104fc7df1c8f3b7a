"""Test doubles of the Embedder seam around the real models: counting what they embed, or holding notes back."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from vault import EnglishEmbedder, MultilingualEmbedder

WAIT = 60.0  # seconds for the background thread to embed a handful of notes on a loaded machine


class Counting:
    """A real model (the multilingual one unless given), counting the texts it is asked to embed."""

    def __init__(self, real: MultilingualEmbedder | EnglishEmbedder | None = None) -> None:
        self.real = real if real is not None else MultilingualEmbedder()
        self.name, self.dim = self.real.name, self.real.dim
        self.texts: list[str] = []

    def load(self) -> None:
        self.real.load()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return self.real.embed(texts)


class Gated(Counting):
    """A real model, made to wait before embedding notes (a search's question passes) until let go."""

    def __init__(self, real: MultilingualEmbedder | EnglishEmbedder | None = None) -> None:
        super().__init__(real)
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("\n" in text for text in texts):  # a note's chunk: its title, a line break, its words
            assert self.gate.wait(WAIT), "the test never let the notes through"
        return super().embed(texts)
