"""One ranking from two: notes found by their words and notes found by their meaning.

Reciprocal rank fusion, the usual way, counts only ranks: a note that shares two common words with the
question ("my", "sent") ranks first by words, and in RRF it then beats the one note that only meaning
finds. Here each note gets two scores on fixed scales instead, and the fused score is their weighted sum:

- by words, the share of the question's weight it holds: each question word weighs its inverse
  document frequency, so holding "recipe" and "sister" counts far more than holding "my" and "sent";
  a note holding every word (the keyword search's own hits) scores 1;
- by meaning, its best chunk's cosine similarity to the question, placed between the noise (the similarity
  of the 50th nearest note, 0) and the best one found (1).

A note comes in when it holds most of the question's weight or is close enough in meaning; bench/recall.py
measures this against RRF on a labelled set (docs/search.md).

A note that has no vector yet (the first index is still being built, or its model could not embed it)
competes by its words alone: its share of the question's weight stands for its meaning too, so a note
that merely has a vector never outranks a keyword hit for having one. And before either, the notes the
question names (its title, file name, alias or heading: :meth:`Index.known_items`) come first.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from vault.index import Index, fold
from vault.notes import SearchHit
from vault.recall import Probe, Recall
from vault.vectors import Neighbour

__all__ = ["fold", "known_first", "search"]  # fold: where bench/recall.py has always found it

# How much meaning weighs against words in the fused score.
MEANING_WEIGHT = 0.5
# A note found only by meaning needs at least this cosine similarity (the model's unrelated pairs sit below 0.15).
MIN_SIMILARITY = 0.2
# Below that, the single closest note still comes in when it stands out: this much closer than the next one
# ("embedding pictures" is 0.125 from "Embed files" and 0.068 from anything else), and not below the floor.
STANDOUT = 1.5
STANDOUT_FLOOR = 0.1
# A note found only by some of the words needs at least this share of the question's weight.
MIN_COVERAGE = 0.5
# Notes named by the start of a name that go first, at most (the whole name puts every note it names first).
_STARTS = 3
# Candidates drawn from each side before fusing.
POOL = 50
# Words in more than this share of the notes say little ("the", "and"): left out of the any-word search.
_COMMON = 0.3
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class _Candidate:
    coverage: float = 0.0
    similarity: float = 0.0
    start: int = 0
    snippet: str | None = None
    embedded: bool = False  # has vectors: without, it competes by its words alone


def search(
    index: Index,
    recall: Recall,
    vector: Probe,
    query: str,
    expression: str,
    limit: int,
    *,
    tags: list[str] | None,
    folder: str | None,
) -> list[SearchHit]:
    """The best notes for ``query`` by words and by meaning (``vector``: the query as the models see it)."""
    candidates: dict[str, _Candidate] = {}
    for path, _title, snippet in index.search(expression, POOL, tags=tags, folder=folder):
        candidates[path] = _Candidate(coverage=1.0, snippet=snippet)
    terms = list(dict.fromkeys(fold(word) for word in _WORD.findall(query)))
    total, frequencies = index.frequencies(terms)
    weights = {term: math.log(1 + (total + 1) / (frequencies[term] + 0.5)) for term in terms}
    rare = [term for term in terms if frequencies[term] and frequencies[term] <= _COMMON * total]
    if rare:
        for path, _title, snippet in index.any_words(rare, POOL):
            candidates.setdefault(path, _Candidate(snippet=snippet))
    nearest = recall.nearest(vector, POOL)
    for neighbour in nearest:
        candidates.setdefault(path := neighbour.path, _Candidate())
        candidates[path].similarity, candidates[path].start = neighbour.score, neighbour.start
        candidates[path].embedded = True
    standout = _standout(nearest)
    if not candidates:
        return []
    _measure_words(index, candidates, rare, weights)
    _measure_meaning(recall, vector, candidates)
    best_similarity = max(c.similarity for c in candidates.values())
    # Meaning is measured from the noise: the similarity of the POOL-th nearest note, which has nothing to do
    # with the question, counts 0. The English model puts unrelated notes at 0.3-0.4 where the multilingual
    # one puts them at 0.1-0.2; relative to the best alone, a note found by a few words and unrelated in
    # meaning would keep most of the meaning score and outrank the note only meaning finds.
    floor = min(nearest[-1].score, best_similarity) if len(nearest) == POOL else 0.0
    scored: list[tuple[float, str]] = []
    for path, candidate in candidates.items():
        if candidate.coverage < MIN_COVERAGE and candidate.similarity < MIN_SIMILARITY and path != standout:
            continue
        if not candidate.embedded:
            meaning = candidate.coverage  # not embedded yet: its words stand for its meaning
        elif best_similarity > floor:
            meaning = max(candidate.similarity - floor, 0.0) / (best_similarity - floor)
        else:
            meaning = 0.0
        scored.append((MEANING_WEIGHT * meaning + (1 - MEANING_WEIGHT) * candidate.coverage, path))
    scored.sort(key=lambda item: (-item[0], item[1]))
    ranked = [path for _, path in scored]
    # Filters and titles from the index: a note found by meaning is held to the same tags and folder.
    described = index.describe({path: candidates[path].start for path in ranked}, tags=tags, folder=folder)
    hits = []
    for path in ranked:
        if path not in described:
            continue
        title, excerpt = described[path]
        hits.append(SearchHit(path, title, candidates[path].snippet or excerpt))
        if len(hits) == limit:
            break
    return hits


def _standout(nearest: list[Neighbour]) -> str | None:
    """The closest note, if it is far closer than the next one."""
    if not nearest or nearest[0].score < STANDOUT_FLOOR:
        return None
    if len(nearest) > 1 and nearest[0].score < STANDOUT * max(nearest[1].score, 0.0):
        return None
    return nearest[0].path


def _measure_words(index: Index, candidates: dict[str, _Candidate], rare: list[str], weights: dict[str, float]) -> None:
    """Each candidate's share of the question's word weight (keyword hits already hold all of it). Only the
    ``rare`` words are looked up: a word in a third of the notes weighs little, says nothing about which
    note is meant, and its lookup costs the most (4 ms each at 10,000 notes, most of a search's time)."""
    open_paths = [path for path, c in candidates.items() if c.coverage < 1.0]
    whole = sum(weights.values())
    if not open_paths or whole <= 0:
        return
    for term in rare:
        for path in index.holding(term, open_paths):
            candidates[path].coverage += weights[term] / whole


def _measure_meaning(recall: Recall, vector: Probe, candidates: dict[str, _Candidate]) -> None:
    """The similarity of candidates found by words only, so both sides score every note."""
    unscored = [path for path, c in candidates.items() if c.similarity == 0.0]
    found: dict[str, Neighbour] = recall.scores_of(vector, unscored)
    for path, neighbour in found.items():
        candidates[path].similarity, candidates[path].start = neighbour.score, neighbour.start
        candidates[path].embedded = True


def known_first(index: Index, known: list[tuple[str, int, int]], hits: list[SearchHit], limit: int) -> list[SearchHit]:
    """``hits`` with the notes the question names (``known``, from :meth:`Index.known_items`) before them: by
    tier (a title before a heading, a whole name before its start), the shortest name, then as ``hits`` rank
    them. Only the closest tier that names a note at all goes first, with at most ``_STARTS`` notes named by
    a name's start: "the" starts many titles, and the notes found by words and meaning keep their places."""
    if not known:
        return hits[:limit]
    best = known[0][1]
    chosen = [item for item in known if item[1] == best]
    if best >= 2:
        chosen = chosen[:_STARTS]
    place = {hit.path: number for number, hit in enumerate(hits)}
    chosen.sort(key=lambda item: (item[1], item[2], place.get(item[0], len(hits)), item[0]))
    found = {hit.path: hit for hit in hits}
    missing = index.describe({path: 0 for path, _, _ in chosen if path not in found})
    first = [
        found.get(path) or SearchHit(path, *missing[path]) for path, _, _ in chosen if path in found or path in missing
    ]
    named = {hit.path for hit in first}
    return [*first, *(hit for hit in hits if hit.path not in named)][:limit]
