"""A fetched page as a clipping: its title, authors, date, description and main content in Markdown.

trafilatura finds the main content and the metadata (measured against readability-lxml +
markdownify on the pages in tests/clip/pages: docs/clipping-and-documents.md). The title is
chosen separately, because an extractor's title is often the ``<title>`` with the site's name on
it: the page's one ``<h1>`` when the page's own title (``og:title`` or ``<title>``) contains it,
else ``og:title``, else the extractor's, else ``<title>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import lxml.html
import trafilatura
from lxml.etree import ParserError
from trafilatura.xml import xmltotxt

from bot.clip.errors import ClipError
from bot.clip.fetch import Fetched
from vault import DocumentText
from vault.documents import extract as document_text

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_HEADING_MARKS = "¶#§ \t\n"
_TITLE_CHARS = 200


@dataclass(frozen=True)
class Page:
    """What a clipping is made of."""

    title: str
    authors: list[str]
    published: str | None  # YYYY-MM-DD
    description: str
    markdown: str


def page_of(fetched: Fetched) -> Page:
    """The clipping of ``fetched``, or :class:`ClipError` when there is nothing to clip."""
    if fetched.media_type == "application/pdf":
        return _pdf(fetched)
    text = decode(fetched.data, fetched.charset)
    if fetched.media_type == "text/plain":
        if not text.strip():
            raise _empty()
        first = next(line.strip() for line in text.splitlines() if line.strip())
        return Page(_short(first), [], None, "", text.strip())
    return _html(text, fetched.url)


def decode(data: bytes, charset: str | None) -> str:
    """A page's text: in the charset its headers name, else the one its ``<meta>`` names, else
    UTF-8, else Windows-1252 (what undeclared Western pages mostly are)."""
    declared = charset
    if declared is None:
        found = _META_CHARSET.search(data[:4096])
        declared = found.group(1).decode("ascii") if found else None
    for encoding in (declared, "utf-8"):
        if encoding is None:
            continue
        try:
            return data.decode(encoding)
        except (LookupError, UnicodeDecodeError):
            continue
    return data.decode("cp1252", errors="replace")


def _html(text: str, url: str) -> Page:
    try:
        tree = lxml.html.fromstring(text)
    except (ParserError, ValueError) as exc:
        raise _empty() from exc
    og = _first(tree.xpath("//meta[@property='og:title']/@content"))
    title_tag = _first(tree.xpath("//title/text()"))
    headings = tree.xpath("//h1")
    h1 = " ".join(headings[0].text_content().split()).strip(_HEADING_MARKS) if headings else None
    document = trafilatura.bare_extraction(
        tree,
        url=url,
        with_metadata=True,
        include_comments=False,
        include_links=True,
        include_formatting=True,
        include_tables=True,
        output_format="markdown",
        # Only the page's own statements of its date: a guess from a copyright line is worse than none.
        date_extraction_params={"extensive_search": False, "original_date": True},
    )
    markdown = xmltotxt(document.body, True).strip() if document is not None and document.body is not None else ""
    if not markdown:
        raise _empty()
    extractor = (document.title or "").strip() or None
    return Page(
        title=_short(headline(h1, og, extractor, title_tag) or _url_words(url)),
        authors=[a.strip() for a in re.split(r";|,| and ", document.author or "") if a.strip()],
        published=document.date or None,
        description=" ".join((document.description or "").split()),
        markdown=markdown,
    )


def headline(h1: str | None, og_title: str | None, extractor: str | None, title_tag: str | None) -> str | None:
    """The page's title by the rule measured best (module docstring)."""
    own = [t.casefold() for t in (og_title, title_tag) if t]
    if h1 and any(h1.casefold() in title for title in own):
        return h1
    for candidate in (og_title, extractor, title_tag):
        if candidate and candidate.strip():
            return " ".join(candidate.split())
    return None


def _pdf(fetched: Fetched) -> Page:
    read: DocumentText = document_text(fetched.data, "page.pdf")
    if read.problem is not None:
        raise ClipError(f"The PDF cannot be clipped: {read.problem}.", "no_content")
    return Page(_url_words(fetched.url), [], None, "", read.text)


def _first(values: list[object]) -> str | None:
    for value in values:
        text = " ".join(str(value).split())
        if text:
            return text
    return None


def _short(title: str) -> str:
    title = " ".join(title.split())
    return title if len(title) <= _TITLE_CHARS else title[:_TITLE_CHARS].rsplit(" ", 1)[0] + "…"


def _url_words(url: str) -> str:
    parts = urlsplit(url)
    words = [w for w in re.split(r"[/\-_.+~]+", unquote(parts.path)) if w and w.lower() not in ("html", "htm", "pdf")]
    return " ".join([parts.hostname or "", *words]).strip() or url


def _empty() -> ClipError:
    return ClipError(
        "The page has no text to clip (it may be built by scripts, which vaultbot does not run).", "no_content"
    )
