"""A fetched page as a clipping: its title, authors, date, description and main content in Markdown.

trafilatura finds the main content (measured against readability-lxml + markdownify on the pages in
tests/clip/pages: docs/clipping-and-documents.md); when it keeps little or nothing, the page's largest text is
taken instead. The title, the authors, the description and the date are read from the page's own statements
of them, before the extractor prunes the tree, because an extractor guesses: its title is often the
``<title>`` with the site's name on it, its author may be a commenter, its description may be a ``<meta
name="description">`` a page mangled, and its date may come from anywhere in the body (an infobox's founding
date). The title is the page's headline without the site's name (bot/clip/headline.py), the authors and date
the ones the page states (bot/clip/byline.py), measured against people's on real pages (bench/clip.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import lxml.html
import trafilatura
from lxml.etree import ParserError
from trafilatura.xml import xmltotxt

from bot.clip.byline import authors, names_in, published
from bot.clip.errors import ClipError
from bot.clip.fetch import Fetched
from bot.clip.headline import is_site_name, page_title, site_names
from bot.clip.jsonld import article, scripts_of
from vault import DocumentText

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_HEADING_MARKS = "¶#§ \t\n"
_TITLE_CHARS = 200
_NOT_TEXT = {"head", "script", "style", "noscript", "template", "nav"}
_THIN = 200  # characters of main text below which the extractor is taken to have missed the article


@dataclass(frozen=True)
class Page:
    """What a clipping is made of."""

    title: str
    authors: list[str]
    published: str | None  # YYYY-MM-DD
    description: str
    markdown: str


def page_of(fetched: Fetched, pdf_text: DocumentText | None = None) -> Page:
    """The clipping of ``fetched``, or :class:`ClipError` when there is nothing to clip. A PDF's text is
    read by the vault, in its sandbox (``Vault.document_text``), and given as ``pdf_text``."""
    if fetched.media_type == "application/pdf":
        return _pdf(fetched, pdf_text)
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
    # Read before the extractor cleans the tree, as Readability reads a page's metadata before it cleans it.
    scripts = scripts_of(tree)
    found = article(scripts)
    sites = site_names(tree, scripts, url)
    # "By Ann Lee and Bo Chan, CNN": the site is not an author, beside its authors or alone ("beltz" on beltz.de).
    stated = [name for name in authors(tree, found) if not is_site_name(name, sites)]
    title = " ".join((page_title(tree, scripts, sites, stated, url) or "").split()).strip(_HEADING_MARKS)
    date = published(tree, found, url)
    # A page that states no title at all is named by the extractor's, its first heading, else its address.
    headings = (" ".join(h.text_content().split()).strip(_HEADING_MARKS) for h in tree.xpath("//h1"))
    heading = next(filter(None, headings), "")
    document = trafilatura.bare_extraction(
        tree,
        url=url,
        with_metadata=True,
        include_comments=False,
        include_links=True,
        include_formatting=True,
        include_tables=True,
        output_format="markdown",
        # The date is read by published(); trafilatura searches for one anyway: keep that search to the metadata.
        date_extraction_params={"extensive_search": False},
    )
    markdown = xmltotxt(document.body, True).strip() if document is not None and document.body is not None else ""
    if len(markdown) < _THIN:
        # Nothing, or a few words of a header: the extractor judged the article boilerplate (it may sit in an
        # <aside>). The page's largest text is then more likely the article than what the extractor kept.
        fallback = _fallback_text(tree)
        markdown = fallback if len(fallback) > 2 * len(markdown) else markdown
    if not markdown:
        raise _empty()
    return Page(
        title=_short(title or (document.title if document else "") or heading or _url_words(url)),
        authors=stated or names_in(document.author if document else None, tree),
        published=date,
        description=_meta(tree, "og:description")
        or _meta(tree, "twitter:description")
        or _meta(tree, "description")
        or " ".join(((document.description if document else None) or "").split()),
        markdown=join_paragraph_lines(markdown),
    )


def _fallback_text(tree: Any) -> str:
    """The page's text when the extractor finds little or no main content in it (it judged the article
    boilerplate): the longer of what trafilatura's baseline reads (the JSON-LD article's body, else its
    ``<article>``, else its paragraphs) and the paragraphs of the block with the most text in them (an article in
    an ``<aside>``, which the baseline cleans away), a paragraph a line; else its rows and items."""
    body, _, _ = trafilatura.baseline(tree)
    baseline = [_words_of(p) for p in body.iter("p")]
    blocks: dict[Any, list[str]] = {}
    for paragraph in tree.iter("p"):
        blocks.setdefault(paragraph.getparent(), []).append(_words_of(paragraph))
    largest = max(blocks.values(), key=lambda texts: sum(map(len, texts)), default=[])
    found = max(baseline, largest, key=lambda texts: sum(map(len, texts)))
    # A page of no paragraphs at all (a table of dates, a list) is clipped as its rows and items.
    return "\n\n".join(p for p in found if p) or "\n\n".join(_block_texts(tree))


def _block_texts(tree: Any) -> list[str]:
    """The text of each innermost row, item, heading and paragraph of the page, but for those in its scripts,
    styles and navigation (so a page built by scripts still has none)."""
    blocks = tree.xpath("//tr | //li | //dt | //dd | //h1 | //h2 | //h3 | //h4 | //p | //pre | //blockquote")
    innermost = (
        block
        for block in blocks
        if not block.xpath(".//tr | .//li | .//p")
        and not any(outer.tag in _NOT_TEXT for outer in block.iterancestors())
    )
    texts = (
        " ".join(filter(None, map(_words_of, block.xpath("td | th")))) if block.tag == "tr" else _words_of(block)
        for block in innermost
    )
    return [text for text in texts if text]


def _words_of(element: Any) -> str:
    return " ".join("".join(element.itertext()).split())


def join_paragraph_lines(markdown: str) -> str:
    """``markdown`` with the line breaks inside a paragraph turned into spaces: they are the page source's
    own wrapping (a link's text then a newline), which Obsidian shows as a break in mid-sentence and which
    runs two words together wherever lines are joined. Lists, tables, quotes, headings and code keep theirs."""
    out: list[str] = []
    fenced = False
    for line in markdown.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            out.append(line)
            continue
        joins = (
            not fenced
            and out
            and out[-1].strip()
            and stripped
            and not out[-1].lstrip().startswith(("#", "|", "```"))
            and not _BLOCK_START.match(line)
        )
        if joins:
            out[-1] = f"{out[-1].rstrip()} {stripped}"
        else:
            out.append(line)
    return "\n".join(out)


_BLOCK_START = re.compile(r"\s*(?:[-*+]\s|\d+[.)]\s|#|>|\||```|<)")


def _meta(tree: Any, name: str) -> str | None:
    return _first(tree.xpath("//meta[@property=$n or @name=$n]/@content", n=name))


def _pdf(fetched: Fetched, read: DocumentText | None) -> Page:
    if read is None:
        raise ValueError("a PDF's text is read by the vault: pass it as pdf_text")
    if read.problem is not None:
        raise ClipError(f"The PDF cannot be clipped: {read.problem}.", "no_content")
    markdown = read.text if read.limits is None else f"{read.text}\n\n[Left out: {read.limits}.]"
    return Page(_url_words(fetched.url), [], None, "", markdown)


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
