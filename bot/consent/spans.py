"""Words by content, not by file: the fingerprints a span of text is found again by.

A span a tainted run wrote (``bot.store.Provenance``) is kept as the fingerprints of its text, so it is
found wherever that text is later, whatever the note is called by then and whatever the person wrote
beside it. The text is first read as a person reads it (:func:`normal`: compatibility forms, case and
runs of white space folded, invisible characters dropped); each :data:`K` words of that are hashed,
and of each :data:`WINDOW` hashes in a row the smallest is kept (winnowing, as in Schleimer, Wilkerson
and Aiken's document fingerprinting). Winnowing is local, so any :data:`FOUND_FROM` words in a row two
texts share give both the same fingerprint: a note that still holds that much of a span holds the
span's words. A line the person rewrote shares less and is theirs from then on. Words, not
characters, so a long clipped page costs a few milliseconds.

A span too short for one window is kept whole (:func:`short`) and found as a substring instead; one
shorter than :data:`AT_LEAST` characters is not kept at all (a "Done." says nothing an attacker needs).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["AT_LEAST", "FOUND_FROM", "K", "WINDOW", "fingerprints", "normal", "short"]

K = 5  # words hashed together
WINDOW = 4  # hashes in a row of which the smallest is kept
FOUND_FROM = K + WINDOW - 1  # shared words in a row that are always found
AT_LEAST = 12  # characters of a span worth keeping
_SPACE = re.compile(r"\s+")


def normal(text: str) -> str:
    """``text`` as it reads: NFKC, case folded, invisible format characters dropped, white space as one space."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    visible = "".join(c for c in folded if unicodedata.category(c) != "Cf")
    return _SPACE.sub(" ", visible).strip()


def _hash(gram: str) -> int:
    # Signed 63 bits: what SQLite's INTEGER holds.
    return int.from_bytes(hashlib.blake2b(gram.encode("utf-8", "surrogatepass"), digest_size=8).digest()) >> 1


def fingerprints(text: str) -> set[int]:
    """The winnowed fingerprints of ``text`` (read by :func:`normal`); empty when it has fewer than :data:`K` words."""
    words = normal(text).split(" ")
    hashes = [_hash(" ".join(words[i : i + K])) for i in range(len(words) - K + 1)]
    if len(hashes) <= WINDOW:
        return {min(hashes)} if hashes else set()
    kept: set[int] = set()
    for start in range(len(hashes) - WINDOW + 1):
        kept.add(min(hashes[start : start + WINDOW]))
    return kept


def short(text: str) -> str | None:
    """A span too short to fingerprint, as kept whole (:func:`normal`); None when it is long enough
    for :func:`fingerprints` or too short to keep."""
    folded = normal(text)
    return folded if len(folded) >= AT_LEAST and folded.count(" ") + 1 < FOUND_FROM else None
