"""Clipping and documents: a fetched page clipped (parse, extract, convert, file) and documents' text
read in the sandbox (a 2-page and a 100-page PDF, a text file: the first reading, which starts the
reading process, and then each, so the sandbox's own cost shows beside pypdf's), timed; the extractor's
quality on the fixture pages in tests/clip/pages (whether the main text came out whole and clean); and
the title, by each source and by each rule, on real pages with Firefox Reader View's titles
(bench/titles, kept to what a title is read from) and on the fixtures.

    .venv/bin/python bench/clip.py           # all of it
    .venv/bin/python bench/clip.py titles    # the titles only

``htmldate SDIST`` measures the title, the authors and the date on the real pages of htmldate 0.9.1's sdist
(GPL-3.0, so not copied here) against bench/titles/htmldate-labels.json; SDIST is the unpacked
``pip download --no-deps --no-binary :all: htmldate==0.9.1``.

``reader-view NODE_MODULES`` compares vaultbot's title with the one Readability.js itself gives (run in Node
with jsdom) on the same pages and on bench/titles/reader-view-edges.json, heads made to take each turn of its
rule; it needs Node and ``npm install --prefix DIR jsdom @mozilla/readability@0.6.0`` (NODE_MODULES is
DIR/node_modules), so it is not part of the rest.
"""

from __future__ import annotations

import gzip
import html
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lxml.html
import trafilatura

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.clip.clipper import file_page  # noqa: E402
from bot.clip.errors import ClipError  # noqa: E402
from bot.clip.extract import page_of  # noqa: E402
from bot.clip.fetch import Fetched  # noqa: E402
from tests.fakes.pdfs import text_pdf  # noqa: E402
from vault import Vault  # noqa: E402
from vault.document_reader import DocumentReader  # noqa: E402

PAGES = ROOT / "tests" / "clip" / "pages"
TITLED = ROOT / "bench" / "titles" / "readability-pages.json"
EDGES = ROOT / "bench" / "titles" / "reader-view-edges.json"
PEOPLE = ROOT / "bench" / "titles" / "people.json"
PEOPLE_PAGES = ROOT / "bench" / "titles" / "newspaper4k-pages.json.gz"
HTMLDATE_LABELS = ROOT / "bench" / "titles" / "htmldate-labels.json"


def _norm(text: str) -> str:
    return " ".join(text.replace("*", "").replace("\\", "").split())


def quality() -> None:
    expected = json.loads((PAGES / "expected.json").read_text(encoding="utf-8"))
    whole = clean = 0
    for name, want in expected.items():
        raw = (PAGES / f"{name}.html").read_text(encoding="utf-8")
        page = page_of(Fetched(f"https://example.com/{name}", "text/html", "utf-8", raw.encode()))
        whole += all(_norm(sentence) in _norm(page.markdown) for sentence in want["must"])
        clean += not any(junk in page.markdown for junk in want["must_not"])
    total = len(expected)
    print(f"main text on the {total} fixture pages: all of it on {whole}/{total}, no boilerplate on {clean}/{total}")


# The tags kept of each real page, written back as the page wrote them (property= or name=).
_KEPT_PROPERTIES = ("og:title", "twitter:title", "og:site_name", "og:description", "article:published_time")
_KEPT_NAMES = ("application-name", "apple-mobile-web-app-title", "parsely-title", "description")


def titled_pages() -> list[tuple[str, str, str, str, str]]:
    """(set, name, address, HTML, expected title): the real pages, rebuilt from what was kept of them (at their
    own address where it is known, so the host's name counts as it would), and the fixtures."""
    real = json.loads(TITLED.read_text(encoding="utf-8"))
    pages = []
    for page in real["pages"]:
        head = [f"<title>{html.escape(page['title'])}</title>"] if "title" in page else []
        for attribute, keys in (("property", _KEPT_PROPERTIES), ("name", _KEPT_NAMES)):
            head += [
                f'<meta {attribute}="{key}" content="{html.escape(page[key], quote=True)}">'
                for key in keys
                if key in page
            ]
        if "ld+json" in page:
            head.append(f'<script type="application/ld+json">{json.dumps(page["ld+json"])}</script>')
        body = "".join(f"<h1>{html.escape(h1)}</h1>" for h1 in page.get("h1", []))
        body += "<p>" + "The body of this page is left out of the benchmark's copy. " * 5 + "</p>"
        document = f"<html><head>{''.join(head)}</head><body>{body}</body></html>"
        address = page.get("url", f"https://example.com/{page['name']}")
        pages.append((page.get("source", "mozilla/readability"), page["name"], address, document, page["expected"]))
    for name, want in json.loads((PAGES / "expected.json").read_text(encoding="utf-8")).items():
        html_text = (PAGES / f"{name}.html").read_text(encoding="utf-8")
        pages.append(("fixture", name, f"https://example.com/{name}", html_text, want["title"]))
    return pages


def _same_title(got: str | None, want: str) -> bool:
    """Titles compared as a reader sees them: runs of spaces, tabs, newlines and no-break spaces are one space
    (an expected title keeps its page's line breaks; every rule here collapses them)."""
    return got is not None and " ".join(got.split()) == " ".join(want.split())


def previous_rule(tree: lxml.html.HtmlElement, extractor: str | None) -> str | None:
    """The rule before this measure: the page's <h1> when og:title or <title> contains it, else og:title,
    else the extractor's title, else <title>."""
    og, title_tag = _first(tree, "//meta[@property='og:title']/@content"), _first(tree, "//title/text()")
    headings = tree.xpath("//h1")
    h1 = " ".join(headings[0].text_content().split()) if headings else None
    if h1 and any(h1.casefold() in t.casefold() for t in (og, title_tag) if t):
        return h1
    return next((t for t in (og, extractor, title_tag) if t), None)


def _first(tree: lxml.html.HtmlElement, query: str) -> str | None:
    return next((" ".join(str(v).split()) for v in tree.xpath(query) if str(v).strip()), None)


def titles() -> None:
    pages = titled_pages()
    ways = ("og:title, else <title>", "<title>", "trafilatura's title", "previous rule (h1 first)", "vaultbot's rule")
    right: dict[tuple[str, str], int] = {}
    misses: list[str] = []
    for kind, name, address, document, want in pages:
        tree = lxml.html.fromstring(document)
        extractor = trafilatura.bare_extraction(document, url=address, with_metadata=True).title
        got = {
            ways[0]: _first(tree, "//meta[@property='og:title']/@content") or _first(tree, "//title/text()"),
            ways[1]: _first(tree, "//title/text()"),
            ways[2]: extractor,
            ways[3]: previous_rule(tree, extractor),
            ways[4]: page_of(Fetched(address, "text/html", "utf-8", document.encode())).title,
        }
        for way, title in got.items():
            right[kind, way] = right.get((kind, way), 0) + _same_title(title, want)
        if not _same_title(got[ways[4]], want):
            misses.append(f"  {kind} {name}: {got[ways[4]]!r}, expected {' '.join(want.split())!r}")
    kinds = list(dict.fromkeys(page[0] for page in pages))
    counts = {kind: sum(1 for page in pages if page[0] == kind) for kind in kinds}
    real = [kind for kind in kinds if kind != "fixture"]
    total = sum(counts[kind] for kind in real)
    print(
        f"titles right on {total} real pages (the expected title is the test set's) and {counts['fixture']} fixtures:"
    )
    for kind in kinds:
        print(f"  {counts[kind]:>3} pages from {kind}")
    for way in ways:
        on_real = sum(right.get((kind, way), 0) for kind in real)
        cells = "  ".join(
            f"{kind.split()[0].split('/')[-1]} {right.get((kind, way), 0)}/{counts[kind]}" for kind in kinds
        )
        print(f"  {way:<28} real {on_real:>3}/{total} ({100 * on_real / total:.1f} %)   {cells}")
    print("vaultbot's rule missed:", *misses, sep="\n")
    _against_people(pages)


def _against_people(pages: list[tuple[str, str, str, str, str]]) -> None:
    """The same real pages against the title a person gives each (``person``, where it is not Reader View's)."""
    person = {page["name"]: page.get("person", page["expected"]) for page in json.loads(TITLED.read_text())["pages"]}
    ours = reader = 0
    misses = []
    real = [page for page in pages if page[0] != "fixture"]
    for _, name, address, document, expected in real:
        got = page_of(Fetched(address, "text/html", "utf-8", document.encode())).title
        ours += _same_title(got, person[name])
        reader += _same_title(expected, person[name])
        if not _same_title(got, person[name]):
            misses.append(f"  {name}: {got!r}, a person's {person[name]!r}")
    print(
        f"the same {len(real)} real pages against a person's titles: vaultbot's rule {ours} "
        f"({100 * ours / len(real):.1f} %), Reader View's {reader} ({100 * reader / len(real):.1f} %); missed:",
        *misses,
        sep="\n",
    )


def _key(text: str) -> str:
    quotes = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'})
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a Markdown link's words
    return " ".join(text.translate(quotes).replace("*", "").replace("\\", "").split())


def _name(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def people() -> None:
    """Title, authors, date and first words against what people wrote of real pages (bench/titles/people.json),
    on the pages the rules were tuned on and on the ones held back."""
    labels = json.loads(PEOPLE.read_text(encoding="utf-8"))["pages"]
    pages = json.loads(gzip.decompress(PEOPLE_PAGES.read_bytes()))
    right: dict[tuple[str, str], int] = {}
    misses = []
    for name, want in labels.items():
        page = pages[name]
        fetched = Fetched(page["url"] or f"https://example.com/{name}", "text/html", "utf-8", page["html"].encode())
        try:
            got = page_of(fetched)
        except ClipError as error:
            misses.append(f"  {want['set']} {name}: {error}")
            continue
        checks = {
            "title": _key(got.title) == _key(want["title"]),
            "authors": sorted(map(_name, got.authors)) == sorted(map(_name, want["authors"])),
            "published": got.published == want["published"],
            "first words": not page["first words"] or _key(page["first words"]) in _key(got.markdown[:1500]),
        }
        for what, ok in checks.items():
            right[want["set"], what] = right.get((want["set"], what), 0) + ok
            if not ok:
                shown = {"title": got.title, "authors": got.authors, "published": got.published}.get(what, "")
                misses.append(f"  {want['set']} {name} {what}: {shown!r}")
    for kind in ("tune", "held-out"):
        total = sum(1 for want in labels.values() if want["set"] == kind)
        cells = "  ".join(
            f"{what} {right.get((kind, what), 0)}/{total}" for what in ("title", "authors", "published", "first words")
        )
        print(f"people's labels, {kind} ({total} pages): {cells}")
    print("missed:", *misses, sep="\n")


def htmldate_pages(sdist: str) -> None:
    """Title, authors and date against bench/titles/htmldate-labels.json on the 65 real pages htmldate 0.9.1's
    sdist ships (``pip download --no-deps --no-binary :all: htmldate==0.9.1``, unpacked; SDIST is its folder):
    on its articles, on the pages the rules were tuned on and on the ones held back, and the titles of the
    pages that are no article (a front page, terms of use). The pages are GPL-3.0, so they are not copied here."""
    labels = json.loads(HTMLDATE_LABELS.read_text(encoding="utf-8"))["pages"]
    right: dict[tuple[str, str], int] = {}
    totals: dict[str, int] = {}
    misses = []
    for name, want in labels.items():
        kind = want["set"] if want["article"] else "no article"
        totals[kind] = totals.get(kind, 0) + 1
        raw = (Path(sdist) / "tests" / "cache" / f"{name}.html").read_bytes()
        try:
            got = page_of(Fetched(want["url"], "text/html", None, raw))
        except ClipError as error:
            misses.append(f"  {kind} {name}: {error}")
            continue
        checks = {
            "title": _key(got.title) == _key(want["title"]),
            "authors": sorted(map(_name, got.authors)) == sorted(map(_name, want["authors"])),
            "published": got.published == want["published"],
        }
        for what, ok in checks.items():
            right[kind, what] = right.get((kind, what), 0) + ok
            if not ok and kind != "held-out":  # the held-back pages' misses are not looked at while tuning
                shown = {"title": got.title, "authors": got.authors, "published": got.published}[what]
                misses.append(f"  {kind} {name} {what}: {shown!r}, expected {want[what]!r}")
    for kind in ("tune", "held-out", "no article"):
        counts = {what: right.get((kind, what), 0) for what in ("title", "authors", "published")}
        cells = "  ".join(f"{what} {n}/{totals[kind]} ({100 * n / totals[kind]:.0f} %)" for what, n in counts.items())
        print(f"htmldate's pages, {kind} ({totals[kind]} pages): {cells}")
    print("missed (the held-back pages' not shown):", *misses, sep="\n")


def reader_view(node_modules: str) -> None:
    """vaultbot's title against Readability.js's own on every page here (see the module's docstring)."""
    pages = [{"name": f"{kind} {name}", "url": url, "html": doc} for kind, name, url, doc, _ in titled_pages()]
    pages += [{**edge, "url": "https://example.com/edge"} for edge in json.loads(EDGES.read_text(encoding="utf-8"))]
    script = ROOT / "bench" / "titles" / "reader_view.js"
    ran = subprocess.run(
        ["node", str(script)],
        input=json.dumps(pages),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NODE_PATH": node_modules},
    )
    theirs = json.loads(ran.stdout)
    differ, untitled = [], 0
    for page in pages:
        ours = page_of(Fetched(page["url"], "text/html", "utf-8", page["html"].encode())).title
        if not (theirs[page["name"]] or "").strip():
            untitled += 1  # Reader View shows no title; a note still needs a name (the extractor's, the <h1>…)
        elif not _same_title(ours, theirs[page["name"]]):
            differ.append(f"  {page['name']}: {ours!r}, Readability.js {theirs[page['name']]!r}")
    titled = len(pages) - untitled
    print(
        f"vaultbot's title is Readability.js's on {titled - len(differ)} of the {titled} pages it titles"
        f" ({untitled} more state no title, which Readability.js leaves empty and vaultbot fills in)",
        *differ,
        sep="\n",
    )


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


class _ChildTimes(logging.Handler):
    """Keeps the processor time of each reading child, from the reader's one line per document."""

    def __init__(self) -> None:
        super().__init__()
        self.cpu_ms: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.cpu_ms.append(float(record.args[5]))  # type: ignore[index]


def pdf_timing(rounds: int = 15) -> None:
    def short(n: int) -> bytes:
        return text_pdf([f"Letter {n}\nDear tenant, the rent is due on the first.", "Yours, the landlord"])

    def long(n: int) -> bytes:
        words = "Words of the annual report, one line after another. " * 8
        return text_pdf([f"Page {p} of report {n}\n" + words for p in range(1, 101)])

    def plain(n: int) -> bytes:
        return f"Shopping list {n}\n".encode() + b"eggs, flour, marmalade\n" * 200

    children = _ChildTimes()
    logger = logging.getLogger("vault.document_reader")
    logger.addHandler(children)
    logger.setLevel(logging.INFO)
    reader = DocumentReader()
    try:
        started = time.perf_counter()
        reader.read(short(-1), "letter.pdf")
        print(f"first document (starts the reading process): {(time.perf_counter() - started) * 1000:.0f} ms")
        for what, make, name in (
            ("2-page PDF", short, "letter.pdf"),
            ("100-page PDF", long, "report.pdf"),
            ("5 KB text file", plain, "list.txt"),
        ):
            timings, cpu = [], []
            children.cpu_ms.clear()
            for n in range(rounds):  # each document different: nothing comes from the reader's cache
                data = make(n)
                started, started_cpu = time.perf_counter(), time.process_time()
                read = reader.read(data, name)
                timings.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - started_cpu) * 1000)
            print(
                f"{what} ({len(data) // 1024} KB, {len(read.text):,} characters of text): read in p50 "
                f"{statistics.median(timings):.1f} ms; processor time p50 {statistics.median(cpu):.1f} ms here "
                f"+ {statistics.median(children.cpu_ms):.1f} ms in the reading child"
            )
    finally:
        reader.close()
        logger.removeHandler(children)


if __name__ == "__main__":
    if sys.argv[1:2] == ["reader-view"]:
        reader_view(sys.argv[2])
        sys.exit()
    if sys.argv[1:2] == ["htmldate"]:
        htmldate_pages(sys.argv[2])
        sys.exit()
    people()
    titles()
    if sys.argv[1:] != ["titles"]:
        quality()
        clip_timing()
        pdf_timing()
