"""Clipping and documents: a fetched page clipped (parse, extract, convert, file) and a 100-page
PDF's text extracted, timed; and the extractor's quality on the fixture pages in tests/clip/pages
(the title by each source and by vaultbot's rule, and whether the main text came out whole and clean).

    .venv/bin/python bench/clip.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import lxml.html
import trafilatura

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.clip.clipper import file_page  # noqa: E402
from bot.clip.extract import page_of  # noqa: E402
from bot.clip.fetch import Fetched  # noqa: E402
from tests.fakes.pdfs import text_pdf  # noqa: E402
from vault import Vault  # noqa: E402
from vault.documents import extract  # noqa: E402

PAGES = ROOT / "tests" / "clip" / "pages"


def _norm(text: str) -> str:
    return " ".join(text.replace("*", "").replace("\\", "").split())


def quality() -> None:
    expected = json.loads((PAGES / "expected.json").read_text(encoding="utf-8"))
    right = {"og:title": 0, "<title>": 0, "extractor": 0, "vaultbot's rule": 0}
    whole = clean = 0
    for name, want in expected.items():
        raw = (PAGES / f"{name}.html").read_text(encoding="utf-8")
        tree = lxml.html.fromstring(raw)
        og = next(iter(tree.xpath("//meta[@property='og:title']/@content")), None)
        title_tag = next(iter(tree.xpath("//title/text()")), None)
        page = page_of(Fetched(f"https://example.com/{name}", "text/html", "utf-8", raw.encode()))
        extractor = trafilatura.bare_extraction(raw, with_metadata=True).title
        for source, value in (("og:title", og), ("<title>", title_tag), ("extractor", extractor)):
            right[source] += value == want["title"]
        right["vaultbot's rule"] += page.title == want["title"]
        whole += all(_norm(sentence) in _norm(page.markdown) for sentence in want["must"])
        clean += not any(junk in page.markdown for junk in want["must_not"])
    total = len(expected)
    print(f"titles right on {total} pages: " + ", ".join(f"{k} {v}/{total}" for k, v in right.items()))
    print(f"main text: all of it on {whole}/{total} pages, no boilerplate on {clean}/{total}")


def clip_timing(rounds: int = 20) -> None:
    pages = sorted(PAGES.glob("*.html"))
    with tempfile.TemporaryDirectory() as folder, Vault(Path(folder) / "vault") as notes:
        timings = []
        for round_ in range(rounds):
            for page in pages:
                fetched = Fetched(f"https://example.com/{page.stem}/{round_}", "text/html", "utf-8", page.read_bytes())
                started = time.perf_counter()
                file_page(notes, fetched, fetched.url, f"Clippings/{round_}")
                timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    p95 = timings[int(len(timings) * 0.95)]
    print(f"page clipped after fetching (parse, extract, convert, file), {len(timings)} clips of {len(pages)} pages:")
    print(f"  p50 {statistics.median(timings):.1f} ms, p95 {p95:.1f} ms")


def pdf_timing() -> None:
    data = text_pdf([f"Page {n}\n" + "Words of the annual report, one line after another. " * 8 for n in range(1, 101)])
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        read = extract(data, "report.pdf")
        timings.append((time.perf_counter() - started) * 1000)
    print(
        f"100-page PDF ({len(data) // 1024} KB, {len(read.text):,} characters of text): "
        f"extracted in p50 {statistics.median(timings):.0f} ms"
    )


if __name__ == "__main__":
    quality()
    clip_timing()
    pdf_timing()
