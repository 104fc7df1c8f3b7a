"""Search by meaning: recall@5 on a labelled set, and speed and memory at 10,000 and 100,000 notes.

    .venv/bin/python bench/recall.py [--models both|multilingual] recall [--filler 2000] [--tune]
    .venv/bin/python bench/recall.py [--models ...] scale --notes 10000 [--sample 1000] [--queries 200] [--keep DIR]
    .venv/bin/python bench/recall.py [--models ...] measure DIR/vault [--queries 200]
    .venv/bin/python bench/recall.py [--models ...] everyday [--related 60]
    .venv/bin/python bench/recall.py [--models ...] firstbuild [--copies 6]

``--models both`` (the default) is what vaultbot runs: English notes embedded by all-MiniLM-L6-v2, the rest
by the multilingual USE; ``--models multilingual`` is USE alone, as before the English model came.

``everyday`` is the measure on real notes: the 1,000 GNOME Help pages in four languages of bench/everyday
(SOURCE.md: where they come from, their licence, how the 44 questions were written) beside the 60 notes of
the labelled set, 1,060 notes in all. It times a new vault's start and its indexing through the background
thread, then a second start with the index built (each in a fresh process), and prints recall@5 of the
44 everyday questions on real notes and the labelled set's 40 everyday questions, four ways as ``recall``
does; then, for ``--related`` English pages, a new note made of the page's first paragraphs, and whether
``related`` names the English page ahead of its translations.

``firstbuild`` opens a new vault of those 1,000 pages ``--copies`` times over in a fresh process and prints how
long until every note has the vectors of its own model, the CPU time a note (models' load included) and the
load average; then how long the English notes' second vectors took after.

``recall`` writes the labelled notes of bench/recall_queries.json into a fresh vault among ``--filler``
generated notes, lets the real model embed them all (timed: indexing notes/s through the background
thread), then runs every labelled query four ways — keyword search alone (vaultbot's search without the
model), nearest vectors alone, plain reciprocal rank fusion (k = 60) of keyword hits and nearest vectors,
and the fusion of ``vault/hybrid.py`` — and prints recall@5 by kind of query (``meaning``: everyday questions that avoid
their note's title and distinctive words; ``words``: queries that use them) and by split. ``--tune``
searches the fusion's thresholds on the ``tune`` split only and prints the best, and how they do on ``test``.

``scale`` generates ``--notes`` notes, embeds ``--sample`` of them with the real model (timed), and fills
the meaning index for the rest with the sample's vectors, each copy perturbed by Gaussian noise and
normalised again, stored with the hash of the note it stands for: the vault then opens with nothing to
embed. A fresh process measures the memory the model and the index add and the latency of hybrid and
keyword-only searches (docs/search.md says how to read the figures).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import lzma
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from vault import Vault, hybrid  # noqa: E402
from vault.embedder import Embedder, EnglishEmbedder, MultilingualEmbedder  # noqa: E402
from vault.index import match_expression  # noqa: E402
from vault.languages import language_of  # noqa: E402
from vault.recall import ACROSS_VECTORS, ENGLISH_VECTORS, Probe, chunk  # noqa: E402
from vault.vectors import PASSED, VectorStore, quantise  # noqa: E402

LABELLED = Path(__file__).with_name("recall_queries.json")
EVERYDAY = Path(__file__).with_name("everyday")
K = 5
RRF_K = 60
_WORD = re.compile(r"\w+", re.UNICODE)
# Which models the vaults of this run embed with (--models).
MODELS = "both"


def models() -> dict[str, Embedder | None]:
    """The Vault's embedders for this run: the multilingual model, and the English one unless --models says no."""
    return {
        "embedder": MultilingualEmbedder(),
        "english": EnglishEmbedder() if MODELS == "both" else None,
    }


def loaded(kwargs: dict[str, Embedder | None]) -> dict[str, Embedder | None]:
    for embedder in kwargs.values():
        if embedder is not None:
            embedder.load()  # type: ignore[attr-defined]
    return kwargs


def cpu_seconds() -> float:
    """CPU time of this process, every thread counted."""
    return time.process_time()


# --- a generated vault of everyday notes -------------------------------------------------------

PEOPLE = "Sam Alex Jo Nina Omar Kate Ben Lucy Raj Marta Felix Hannah Yusuf Clara Leo Ingrid".split()
PLACES = "the office,the park,town,the station,the library,the market,the café,the gym,home,the shop".split(",")
THINGS = (
    "the report,the budget,the shelves,the invoice,the old bike,the garden fence,the spare room,the laptop,"
    "the printer,the photos,the book club list,the quarterly plan,the paint,the blinds,the charger,the rota"
).split(",")
WHEN = "on Monday,this morning,after lunch,next week,tomorrow,at the weekend,before Friday,tonight,later".split(",")
FEELINGS = "tired,pleased,busy,calm,annoyed,hopeful,relieved,distracted,curious".split(",")
TEMPLATES = [
    "Met {p} at {pl} {w} to talk about {t}.",
    "{p} asked me to look at {t} {w}.",
    "Need to sort out {t} {w}; {p} said they would help.",
    "Felt {f} most of the day, mostly because of {t}.",
    "Went to {pl} {w} and forgot {t} again.",
    "{p} thinks we should move {t} to {pl}.",
    "Remember to message {p} about {t} {w}.",
    "Spent an hour on {t} at {pl}; it is nearly done.",
    "{p} and {q} disagreed about {t}, so we will decide {w}.",
    "Quiet day at {pl}. Read a bit, walked a bit, felt {f}.",
    "Ordered a replacement for {t}; it should arrive {w}.",
    "Ideas for {t}: ask {p}, check the price at {pl}, decide {w}.",
]
TITLES = ["Notes", "Call with {p}", "Errands", "Thoughts", "Plan for {t}", "{p}", "Log", "Week ahead"]
FOLDERS = ["Inbox", "Journal", "Projects/Home", "Projects/Work", "People", "Ideas"]


def everyday_note(rng: random.Random, number: int) -> tuple[str, str]:
    """(path, text) of a generated note of 60-200 words in plain English."""
    slots = {
        "p": rng.choice(PEOPLE),
        "q": rng.choice(PEOPLE),
        "pl": rng.choice(PLACES),
        "t": rng.choice(THINGS),
        "w": rng.choice(WHEN),
        "f": rng.choice(FEELINGS),
    }
    title = rng.choice(TITLES).format(**slots).replace("the ", "").capitalize()
    sentences: list[str] = []
    words = 0
    target = rng.randint(60, 200)
    while words < target:
        slots.update(p=rng.choice(PEOPLE), pl=rng.choice(PLACES), t=rng.choice(THINGS), w=rng.choice(WHEN))
        sentence = rng.choice(TEMPLATES).format(**slots)
        sentences.append(sentence[0].upper() + sentence[1:])
        words += len(sentence.split())
    return f"{rng.choice(FOLDERS)}/{title} {number}.md", " ".join(sentences) + "\n"


def write_generated(root: Path, count: int, seed: int = 7) -> list[str]:
    """Write ``count`` generated notes under ``root``; their paths, in order."""
    rng = random.Random(seed)
    paths = []
    for number in range(count):
        rel, text = everyday_note(rng, number)
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        paths.append(rel)
    return paths


def write_labelled(root: Path) -> dict:
    labelled = json.loads(LABELLED.read_text(encoding="utf-8"))
    for note in labelled["notes"]:
        target = root / note["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(note["body"] + "\n", encoding="utf-8")
    return labelled


# --- the three ways to search ---------------------------------------------------------------------


def keyword_only(vault: Vault, query: str) -> list[str]:
    expression = match_expression(query)
    if expression is None:
        return []
    return [path for path, _title, _snippet in vault._catalog.index.search(expression, K)]


def plain_rrf(vault: Vault, query: str, vector: Probe) -> list[str]:
    """Reciprocal rank fusion of keyword hits (all words, then any of them by bm25) and nearest vectors."""
    index = vault._catalog.index
    expression = match_expression(query)
    by_words = [path for path, _t, _s in index.search(expression, hybrid.POOL)] if expression else []
    terms = list(dict.fromkeys(hybrid.fold(word) for word in _WORD.findall(query)))
    if terms:
        by_words += [path for path, _t, _s in index.any_words(terms, hybrid.POOL) if path not in by_words]
    by_meaning = [n.path for n in vault._recall.nearest(vector, hybrid.POOL)]
    scores: dict[str, float] = {}
    for ranking in (by_words, by_meaning):
        for rank, path in enumerate(ranking):
            scores[path] = scores.get(path, 0.0) + 1.0 / (RRF_K + rank + 1)
    return [path for path, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))][:K]


def fused(vault: Vault, query: str, vector: Probe) -> list[str]:
    expression = match_expression(query)
    if expression is None:
        return []
    hits = hybrid.search(vault._catalog.index, vault._recall, vector, query, expression, K, tags=None, folder=None)
    return [hit.path for hit in hits]


def recall_at_k(queries: list[dict], found: dict[str, list[str]]) -> str:
    if not queries:
        return "  -  "
    hit = sum(q["note"] in found[q["query"]] for q in queries)
    return f"{hit / len(queries):.2f} ({hit}/{len(queries)})"


def table(queries: list[dict], vault: Vault, vectors: dict[str, Probe], split: str) -> dict[str, dict]:
    chosen = [q for q in queries if split == "all" or q["split"] == split]
    ways = {
        "keyword only": {q["query"]: keyword_only(vault, q["query"]) for q in chosen},
        "meaning only": {q["query"]: [n.path for n in vault._recall.nearest(vectors[q["query"]], K)] for q in chosen},
        "plain RRF": {q["query"]: plain_rrf(vault, q["query"], vectors[q["query"]]) for q in chosen},
        "hybrid (vault/hybrid.py)": {q["query"]: fused(vault, q["query"], vectors[q["query"]]) for q in chosen},
    }
    print(f"\nrecall@{K}, {split} queries      meaning              words                all")
    for name, found in ways.items():
        cells = [recall_at_k([q for q in chosen if q["kind"] == kind], found) for kind in ("meaning", "words")]
        print(f"{name:<26} {cells[0]:<20} {cells[1]:<20} {recall_at_k(chosen, found)}")
    return ways


THRESHOLDS = ("MEANING_WEIGHT", "MIN_SIMILARITY", "STANDOUT", "MIN_COVERAGE")
GRID = {
    "MEANING_WEIGHT": [0.3, 0.4, 0.5, 0.6, 0.7],
    "MIN_SIMILARITY": [0.1, 0.15, 0.2, 0.25, 0.3],
    "STANDOUT": [1.2, 1.5, 2.0],
    "MIN_COVERAGE": [0.3, 0.5, 0.7],
}


def tune(queries: list[dict], vault: Vault, vectors: dict[str, Probe]) -> None:
    """Grid-search the fusion's thresholds on the tune split; report the best settings on the test split."""
    shipped = {name: getattr(hybrid, name) for name in THRESHOLDS}
    tuning = [q for q in queries if q["split"] == "tune"]
    results = []
    for values in itertools.product(*(GRID[name] for name in THRESHOLDS)):
        for name, value in zip(THRESHOLDS, values, strict=True):
            setattr(hybrid, name, value)
        hits = {kind: 0 for kind in ("meaning", "words")}
        for q in tuning:
            hits[q["kind"]] += q["note"] in fused(vault, q["query"], vectors[q["query"]])
        # Both kinds count: a setting may not buy meaning queries with keyword ones.
        results.append((hits["meaning"] + hits["words"], min(hits.values()), values))
    results.sort(key=lambda item: (-item[0], -item[1]))
    print(f"\ntuning on {len(tuning)} queries: best 5 of {len(results)} settings ({', '.join(THRESHOLDS)})")
    for total, worst, values in results[:5]:
        print(f"  {values}: {total}/{len(tuning)} (worst kind {worst})")
    shipped_values = tuple(shipped[name] for name in THRESHOLDS)
    for total, _worst, values in results:
        if values == shipped_values:
            print(f"  shipped {values}: {total}/{len(tuning)}")
    for name, value in zip(THRESHOLDS, results[0][2], strict=True):
        setattr(hybrid, name, value)
    print("best tuned settings on the held-out test split:")
    table(queries, vault, vectors, "test")
    for name, value in shipped.items():
        setattr(hybrid, name, value)


def run_recall(filler: int, do_tune: bool) -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        root = Path(tmp) / "vault"
        labelled = write_labelled(root)
        write_generated(root, filler)
        count = len(labelled["notes"]) + filler
        kwargs = loaded(models())
        started, cpu = time.perf_counter(), cpu_seconds()
        vault = Vault(root, **kwargs)
        if not vault.wait_for_meaning(3600):
            raise SystemExit("the meaning index was not built within an hour")
        seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
        print(f"{count} notes ({len(labelled['notes'])} labelled, {filler} generated): indexed by words and")
        print(
            f"meaning in {seconds:.1f} s, {count / seconds:.1f} notes/s, {cpu / count * 1000:.1f} CPU-ms a note; "
            f"embedded by each model: {vault._recall.embedded()}"
        )
        try:
            queries = labelled["queries"]
            vectors = {q["query"]: vault._recall.query(q["query"]) for q in queries}
            for split in ("tune", "test", "all"):
                table(queries, vault, vectors, split)
            if do_tune:
                tune(queries, vault, vectors)
        finally:
            vault.close()


# --- at scale ------------------------------------------------------------------------------------------


def run_scale(notes: int, sample: int, queries: int, noise: float, keep: Path | None) -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        root = (keep or Path(tmp)) / "vault"
        started = time.perf_counter()
        paths = write_generated(root, notes)
        print(f"{notes} notes written in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        Vault(root).close()
        print(f"keyword index built in {time.perf_counter() - started:.1f} s")

        # The model each note goes to, as the vault routes them (the generated notes are English).
        embedders = [e for e in loaded(models()).values() if e is not None]
        files = [root / ".vaultbot" / "vectors.db", root / ".vaultbot" / ENGLISH_VECTORS][: len(embedders)]
        route = [
            1 if len(embedders) > 1 and language_of((root / rel).read_text(encoding="utf-8")) == "en" else 0
            for rel in paths[:sample]
        ]
        rng = np.random.default_rng(11)
        cut = [chunk(rel, (root / rel).read_bytes()) for rel in paths[:sample]]
        started, cpu = time.perf_counter(), cpu_seconds()
        sample_vectors: list[np.ndarray] = [np.zeros(0)] * sample
        for number, embedder in enumerate(embedders):
            mine = [at for at in range(sample) if route[at] == number]
            for at in range(0, len(mine), 16):  # in batches of 16, as the background thread embeds
                batch = mine[at : at + 16]
                rows = embedder.embed([text for i in batch for text in cut[i].texts])
                for i in batch:
                    sample_vectors[i] = rows[: len(cut[i].texts)]
                    rows = rows[len(cut[i].texts) :]
        seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
        chunks = sum(len(c.texts) for c in cut)
        print(
            f"embedding {sample} notes ({chunks} chunks; by model {[route.count(n) for n in range(len(embedders))]}): "
            f"{seconds:.1f} s, {sample / seconds:.1f} notes/s, {cpu / sample * 1000:.1f} CPU-ms a note"
        )
        # The English notes' second vectors, by the multilingual model, as the vault's last line makes them.
        across_vectors: list[np.ndarray | None] = [None] * sample
        if len(embedders) > 1:
            started, cpu = time.perf_counter(), cpu_seconds()
            english = [at for at in range(sample) if route[at] == 1]
            for at in range(0, len(english), 16):
                batch = english[at : at + 16]
                rows = embedders[0].embed([text for i in batch for text in cut[i].texts])
                for i in batch:
                    across_vectors[i] = rows[: len(cut[i].texts)]
                    rows = rows[len(cut[i].texts) :]
            seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
            each = cpu / max(len(english), 1) * 1000
            print(f"second vectors of {len(english)} English notes: {seconds:.1f} s, {each:.1f} CPU-ms a note")
        connections = []
        stores = list(zip(embedders, files, strict=True))
        if len(embedders) > 1:  # the file of the English notes' second vectors (vault.signs) has the same schema
            stores.append((embedders[0], root / ".vaultbot" / ACROSS_VECTORS))
        for embedder, path in stores:
            VectorStore(path, model=embedder.name, dim=embedder.dim).close()
            connections.append(sqlite3.connect(path))
        started = time.perf_counter()
        for number, rel in enumerate(paths):
            data = (root / rel).read_bytes()
            source = number % sample
            home = route[source]
            sha = hashlib.sha256(data).hexdigest()
            for space, conn in enumerate(connections):
                own = space == home or (space == 2 and home == 1)
                source_vectors = across_vectors[source] if space == 2 else sample_vectors[source]
                if not own or source_vectors is None:
                    records = [(rel, PASSED, sha, 0, 0.0, b"")] if space < 2 else []
                else:
                    rows, scales = quantise(copied(source_vectors, rng, noise) if number >= sample else source_vectors)
                    records = [
                        (rel, seq, sha, start, float(scale), row.tobytes())
                        for seq, (start, scale, row) in enumerate(zip(cut[source].starts, scales, rows, strict=True))
                    ]
                conn.executemany(
                    "INSERT INTO chunks (path, seq, sha256, start, scale, vector) VALUES (?, ?, ?, ?, ?, ?)", records
                )
        for conn in connections:
            conn.commit()
            conn.close()
        print(f"meaning index filled for {notes} notes in {time.perf_counter() - started:.1f} s")
        out = subprocess.run(
            [sys.executable, __file__, "--models", MODELS, "measure", str(root), "--queries", str(queries)],
            check=True,
            capture_output=True,
            text=True,
        )
        print(out.stdout, end="")


def copied(vectors: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    """``vectors`` with Gaussian noise of norm ``noise`` added to each row, normalised again."""
    dim = vectors.shape[1]
    moved = vectors + rng.normal(0, noise / np.sqrt(dim), (1, dim))
    return (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def percentiles(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100)
    return f"p50 {q[49]:7.2f} ms  p95 {q[94]:7.2f} ms  (n={len(samples)})"


# A question that does not read as English, for the English notes' second vectors.
ACROSS_QUESTION = "Wie ändere ich das Passwort meines Benutzerkontos?"


def run_measure(root: Path, queries: int) -> None:
    """In a fresh process: memory added by the model and index, and search latency, words and hybrid."""
    labelled = json.loads(LABELLED.read_text(encoding="utf-8"))
    texts = [q["query"] for q in labelled["queries"]]
    texts = list(itertools.islice(itertools.cycle(texts), queries))

    cpu: list[float] = []

    def timed(vault: Vault) -> list[float]:
        samples = []
        cpu.clear()
        for text in texts:
            started, used = time.perf_counter(), cpu_seconds()
            vault.search(text)
            samples.append((time.perf_counter() - started) * 1000)
            cpu.append((cpu_seconds() - used) * 1000)
        return samples

    vault = Vault(root, max_staleness=3600)
    keyword = timed(vault)
    before = rss_mb()
    vault.close()
    kwargs = models()
    grown = []
    for embedder in kwargs.values():
        if embedder is not None:
            embedder.load()  # type: ignore[attr-defined]
            grown.append(f"+{rss_mb() - before - sum(float(g.split()[0][1:]) for g in grown):.0f} MB {embedder.name}")
    with_model = rss_mb()
    started = time.perf_counter()
    vault = Vault(root, max_staleness=3600, **kwargs)
    if not vault.wait_for_meaning(600):
        raise SystemExit("the meaning index did not load")
    opened = time.perf_counter() - started
    hybrid_samples = timed(vault)
    after = rss_mb()
    print(
        f"notes with vectors by model {vault._recall.embedded()} and chunks with second vectors "
        f"{len(vault._recall._across) if vault._recall._across is not None else 0}; "
        f"vault with meaning index opened in {opened:.1f} s (nothing to embed)"
    )
    # The English notes' second vectors are read on the first question that does not read as English.
    started = time.perf_counter()
    vault.search(ACROSS_QUESTION)
    first_across = (time.perf_counter() - started) * 1000
    across = [timed_one(vault, ACROSS_QUESTION) for _ in range(20)]
    across_after = rss_mb()
    vault.close()
    print(f"keyword-only search  {percentiles(keyword)}")
    print(f"hybrid search        {percentiles(hybrid_samples)}  (query embedding included)")
    print(f"hybrid search, CPU   {percentiles(cpu)}  (CPU time of the search, whatever the load)")
    print(
        f"memory: RSS {before:.0f} MB with the keyword vault; {'; '.join(grown)}; "
        f"+{after - with_model:.0f} MB meaning index and searches; +{after - before:.0f} MB in all"
    )
    print(
        f"then a German question: first {first_across:.0f} ms, then {percentiles(across)}; "
        f"+{across_after - after:.0f} MB, +{across_after - before:.0f} MB in all"
    )


def timed_one(vault: Vault, text: str) -> float:
    """The wall time of one search, in ms."""
    started = time.perf_counter()
    vault.search(text)
    return (time.perf_counter() - started) * 1000


# --- real notes in four languages ----------------------------------------------------------------


def write_everyday(root: Path) -> tuple[list[dict], list[dict]]:
    """Write the real notes and the labelled set's notes under ``root``; (notes, everyday questions)."""
    notes = json.loads(lzma.decompress((EVERYDAY / "notes.json.xz").read_bytes()))
    for note in notes:
        target = root / note["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(note["body"] + "\n", encoding="utf-8")
    labelled = write_labelled(root)
    questions = [
        {"query": q["question"], "note": q["note"], "set": f"real notes ({q['language']})"}
        for q in json.loads((EVERYDAY / "questions.json").read_text(encoding="utf-8"))
    ]
    questions += [
        {"query": q["query"], "note": q["note"], "set": "labelled set"}
        for q in labelled["queries"]
        if q["kind"] == "meaning"
    ]
    return notes, questions


def run_everyday(related: int) -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        root = Path(tmp) / "vault"
        notes, questions = write_everyday(root)
        count = sum(1 for _ in root.rglob("*.md"))
        print(f"{count} notes ({len(notes)} real notes in 4 languages, {count - len(notes)} of the labelled set)")
        print("new vault:", _start(root, build=True))
        print("index built:", _start(root, build=False))
        vault = Vault(root, **loaded(models()))
        try:
            if not vault.wait_for_meaning(600):
                raise SystemExit("the meaning index did not load")
            vectors = {q["query"]: vault._recall.query(q["query"]) for q in questions}
            ways = {
                "keyword only": lambda q: keyword_only(vault, q),
                "meaning only": lambda q: [n.path for n in vault._recall.nearest(vectors[q], K)],
                "plain RRF": lambda q: plain_rrf(vault, q, vectors[q]),
                "vaultbot's search": lambda q: [hit.path for hit in vault.search(q, K)],
            }
            sets = sorted({q["set"] for q in questions})
            print(f"\nrecall@{K} of everyday questions " + "".join(f"| {name:<20}" for name in [*sets, "all"]))
            for name, way in ways.items():
                found = {q["query"]: way(q["query"]) for q in questions}
                cells = [recall_at_k([q for q in questions if q["set"] == s], found) for s in sets]
                print(f"{name:<33}" + "".join(f"| {cell:<20}" for cell in [*cells, recall_at_k(questions, found)]))
            _across(vault, notes)
            _related(vault, root, notes, related)
        finally:
            vault.close()


def _across(vault: Vault, notes: list[dict]) -> None:
    """recall@5 across languages with vaultbot's search: for each question on real notes, its page in each
    other language among the search's results in that language's folder (into English: a German, French or
    Spanish question's English page; from English: an English question's German, French, Spanish pages)."""
    pages: dict[str, dict[str, str]] = {}
    page_of = {}
    for note in notes:
        pages.setdefault(note["page"], {})[note["language"]] = note["path"]
        page_of[note["path"]] = note["page"]
    questions = json.loads((EVERYDAY / "questions.json").read_text(encoding="utf-8"))
    tally: dict[str, list[int]] = {}
    for question in questions:
        for language, path in pages[page_of[question["note"]]].items():
            if language == question["language"]:
                continue
            kind = "into English" if language == "en" else (
                "from English" if question["language"] == "en" else "between others")
            found = [hit.path for hit in vault.search(question["question"], K, folder=f"Help/{language}")]
            tally.setdefault(kind, [0, 0])
            tally[kind][0] += path in found
            tally[kind][1] += 1
    print("\nacross languages, vaultbot's search in the page's language's folder, recall@5: " + "; ".join(
        f"{kind} {hits}/{count}" for kind, (hits, count) in sorted(tally.items())))


def _start(root: Path, *, build: bool) -> str:
    """Open the vault in a fresh process: how long until it opens, until search answers by meaning, and (for
    a new vault) until every note is embedded."""
    out = subprocess.run(
        [sys.executable, __file__, "--models", MODELS, "start", str(root), *(["--build"] if build else [])],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def run_start(root: Path, build: bool) -> None:
    started, cpu = time.perf_counter(), cpu_seconds()
    vault = Vault(root, **models())
    opened = time.perf_counter() - started
    question = "why does the display get darker when I leave it alone"
    while vault._recall.query(question) is None:
        time.sleep(0.01)
    meaning = time.perf_counter() - started
    line = f"opened in {opened:.2f} s, search by meaning from {meaning:.2f} s"
    while not vault._recall.loaded:
        time.sleep(0.01)
    line += f", with every model from {time.perf_counter() - started:.2f} s"
    if build:
        pending = len(vault._catalog.index.known())
        recall = vault._recall
        deadline = time.monotonic() + 3600
        # The first build: every note has the vectors of its own model (the English notes' second vectors, by
        # the multilingual model, come after, in a line of their own).
        while recall._line or recall._later or recall._firsts or not recall.loaded:
            if time.monotonic() > deadline:
                raise SystemExit("not embedded within an hour")
            time.sleep(0.05)
        seconds, used = time.perf_counter() - started, cpu_seconds() - cpu
        line += (
            f"; {pending} notes embedded in {seconds:.0f} s: {pending / seconds:.1f} notes/s, "
            f"{used:.0f} CPU-s ({used / pending * 1000:.1f} CPU-ms a note, {pending / used:.1f} notes a CPU-second; "
            f"models loaded included), load average {os.getloadavg()[0]:.1f}; by model {recall.embedded()}"
        )
        if not vault.wait_for_meaning(3600):
            raise SystemExit("the second vectors were not made within an hour")
        total, used = time.perf_counter() - started, cpu_seconds() - cpu
        seconds = max(total - seconds, 1e-9)
        line += (
            f"; then second vectors of {len(recall._across or [])} English chunks in {seconds:.0f} s "
            f"({used:.0f} CPU-s in all, load average {os.getloadavg()[0]:.1f})"
        )
    vault.close()
    print(line)


def run_firstbuild(copies: int) -> None:
    """A new vault of the 1,000 GNOME Help pages ``copies`` times over (each copy in a folder of its own), opened
    in a fresh process: how long until every note has its vectors, and the CPU time a note."""
    notes = json.loads(lzma.decompress((EVERYDAY / "notes.json.xz").read_bytes()))
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        root = Path(tmp) / "vault"
        for copy in range(copies):
            for note in notes:
                target = root / f"Copy {copy + 1}" / note["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(note["body"] + "\n", encoding="utf-8")
        print(f"{copies * len(notes)} notes ({len(notes)} GNOME Help pages in 4 languages, {copies} times)")
        print("new vault:", _start(root, build=True))


def _related(vault: Vault, root: Path, notes: list[dict], count: int) -> None:
    """For English pages with all three translations: a new note of the page's first paragraphs; is the
    English page named first by ``related``, and how many of the three named are in English?"""
    pages = {}
    for note in notes:
        pages.setdefault(note["page"], {})[note["language"]] = note
    complete = [versions for versions in pages.values() if len(versions) == 4][:count]
    first = same = named = 0
    for versions in complete:
        english = versions["en"]
        text = "\n\n".join(english["body"].split("\n\n")[:2])
        written = vault.write("Inbox", f"About {english['page']}", text)
        found = vault.related(written.path)
        first += bool(found) and found[0].path == english["path"]
        same += sum(r.path.startswith("Help/en/") or not r.path.startswith("Help/") for r in found)
        named += len(found)
    print(
        f"\nrelated of {len(complete)} new English notes (a page's first paragraphs): the English page first "
        f"{first}/{len(complete)}; English among all named {same}/{named}"
    )


def main() -> None:
    global MODELS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", choices=("both", "multilingual"), default="both")
    commands = parser.add_subparsers(dest="command", required=True)
    recall = commands.add_parser("recall")
    recall.add_argument("--filler", type=int, default=2000)
    recall.add_argument("--tune", action="store_true")
    scale = commands.add_parser("scale")
    scale.add_argument("--notes", type=int, default=10_000)
    scale.add_argument("--sample", type=int, default=1000)
    scale.add_argument("--queries", type=int, default=200)
    scale.add_argument("--keep", type=Path, default=None, help="build the vault here and keep it")
    scale.add_argument("--noise", type=float, default=0.3, help="norm of the noise added to each copied vector")
    measure = commands.add_parser("measure")
    measure.add_argument("root", type=Path)
    measure.add_argument("--queries", type=int, default=200)
    everyday = commands.add_parser("everyday")
    everyday.add_argument("--related", type=int, default=60)
    first = commands.add_parser("firstbuild", help="a new vault of the GNOME pages --copies times over, timed")
    first.add_argument("--copies", type=int, default=6)
    start = commands.add_parser("start")
    start.add_argument("root", type=Path)
    start.add_argument("--build", action="store_true")
    args = parser.parse_args()
    MODELS = args.models
    if args.command == "recall":
        run_recall(args.filler, args.tune)
    elif args.command == "everyday":
        run_everyday(args.related)
    elif args.command == "start":
        run_start(args.root, args.build)
    elif args.command == "firstbuild":
        run_firstbuild(args.copies)
    elif args.command == "scale":
        run_scale(args.notes, args.sample, args.queries, args.noise, args.keep)
    else:
        run_measure(args.root, args.queries)


if __name__ == "__main__":
    main()
