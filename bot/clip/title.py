"""A page's title as Firefox's Reader View reads it.

Reader View is Mozilla's Readability.js; this is the logic of its title, ported from Readability.js 0.6.0
(Apache-2.0; ``_getJSONLD``, ``_getArticleMetadata``, ``_getArticleTitle``, ``_textSimilarity`` and
``_unescapeHtmlEntities``) and written here in our own words:

1. The page's first JSON-LD script that is a schema.org article (its ``@context`` schema.org, its ``@type``
   one of Readability's article types) gives its ``name``, or its ``headline`` when only that is given or
   when the headline and not the name resembles the ``<title>`` (aktualne.cz puts the site's name in ``name``).
2. Else the page's ``<meta>`` tags, in this order: ``dc:title``, ``dcterm:title``, ``og:title``,
   ``weibo:article:title``, ``weibo:webpage:title``, ``<meta name="title">``, ``twitter:title``,
   ``parsely-title``. All of these are taken whole, the site's name in them included.
3. Else the ``<title>``, cut: of ``Headline | Site`` (a bar, hyphen, slash, backslash, ``>`` or ``»`` with
   spaces around it) the part before the last separator, or, if that leaves fewer than three words, the
   title after its first separator character; of ``Site: Headline`` the part after the last colon (after the
   first if that leaves fewer than three words; the whole if more than five words come before the colon),
   unless an ``<h1>`` or ``<h2>`` is the whole title; a title shorter than 15 or longer than 150 characters
   gives way to the page's ``<h1>`` when it has exactly one. What is left is kept only if it is more than four
   words (or, after a hierarchical separator, exactly the title less one part): "Mozilla - Wikipedia" stays
   whole, "Photosynthesis in C4 plants explained - Wikipedia" loses "Wikipedia".

HTML character references left in a title (``&quot;``, ``&#x27;``) are read as the characters they stand for.
Measured against Reader View's titles on real pages in bench/clip.py (docs/clipping-and-documents.md).
"""

from __future__ import annotations

import re
from typing import Any

# JavaScript's \s: what Readability's regular expressions and String.trim take for a space.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(map(chr, range(0x2000, 0x200B)))
_S = f"[{re.escape(_JS_SPACE)}]"
_SPACES = re.compile(f"{_S}+")
_RUNS_OF_SPACES = re.compile(f"{_S}{{2,}}")
_HTML_SPACE = re.compile("[\t\n\f\r ]+")  # what document.title collapses
_SEPARATOR = re.compile(r" [|\-\\/>»] ")
_HIERARCHICAL = re.compile(r" [\\/>»] ")
_UP_TO_FIRST_SEPARATOR = re.compile(r"^[^|\-\\/>»]*[|\-\\/>»]")
_SEPARATOR_CHARS = re.compile(r"[|\-\\/>»]+")
# Readability's list, with its anchors as it writes them: only "Article" must start the type and only
# "APIReference" must end it; the others may stand anywhere in it.
_ARTICLE_TYPE = re.compile(
    r"^Article|AdvertiserContentArticle|NewsArticle|AnalysisNewsArticle|AskPublicNewsArticle|BackgroundNewsArticle"
    r"|OpinionNewsArticle|ReportageNewsArticle|ReviewNewsArticle|Report|SatiricalArticle|ScholarlyArticle"
    r"|MedicalScholarlyArticle|SocialMediaPosting|BlogPosting|LiveBlogPosting|DiscussionForumPosting|TechArticle"
    r"|APIReference\Z"
)
_SCHEMA_ORG = re.compile(r"https?://schema\.org/?")
# Which <meta> tags Readability reads, by property (anywhere in it) or by name (the whole of it). Readability's
# property pattern starts with spaces too; they are left out here (the key drops spaces, so it names the same
# tag), as a search that starts at every space of a long run of them takes time in its square.
_PROPERTY = re.compile(
    rf"(?:article|dc|dcterm|og|twitter){_S}*:{_S}*"
    rf"(?:author|creator|description|published_time|title|site_name){_S}*",
    re.IGNORECASE,
)
_NAME = re.compile(
    rf"{_S}*(?:(?:dc|dcterm|og|twitter|parsely|weibo:(?:article|webpage)){_S}*[-.:]{_S}*)?"
    rf"(?:author|creator|pub-date|description|title|site_name){_S}*",
    re.IGNORECASE,
)
_META_TITLES = (
    "dc:title",
    "dcterm:title",
    "og:title",
    "weibo:article:title",
    "weibo:webpage:title",
    "title",
    "twitter:title",
    "parsely-title",
)
_NAMED_REFERENCE = re.compile(r"&(quot|amp|apos|lt|gt);")
_NUMBERED_REFERENCE = re.compile(r"&#(?:x([0-9a-f]+)|([0-9]+));", re.IGNORECASE)
_NAMED = {"quot": '"', "amp": "&", "apos": "'", "lt": "<", "gt": ">"}
_NOT_A_WORD = re.compile(r"[^A-Za-z0-9_]+")  # JavaScript's \W, which is ASCII-only


def reader_title(tree: Any, scripts: list[Any]) -> str | None:
    """The title Reader View gives the page ``tree`` (module docstring), whose parsed JSON-LD is ``scripts``;
    None when the page states none (no JSON-LD article, no title ``<meta>``, an empty ``<title>``)."""
    title = _json_ld_title(tree, scripts) or _meta_title(tree) or _cut_title_tag(tree)
    return unescape(title) if title else None


def _json_ld_title(tree: Any, scripts: list[Any]) -> str | None:
    for parsed in scripts:
        try:
            article = _reader_article(parsed)
        except _NotRead:
            continue
        if article is None:
            continue
        # Readability stops at the first article it accepts, titled or not.
        name, headline = article.get("name"), article.get("headline")
        if isinstance(name, str) and isinstance(headline, str) and name != headline:
            cut = _cut_title_tag(tree)
            if _similarity(headline, cut) > 0.75 and not _similarity(name, cut) > 0.75:
                return headline
            return name
        if isinstance(name, str):
            return _trim(name)
        if isinstance(headline, str):
            return _trim(headline)
        return None
    return None


class _NotRead(Exception):
    """A JSON-LD script Readability gives up on (where its JavaScript would throw)."""


def _reader_article(parsed: Any) -> dict[str, Any] | None:
    """The schema.org article Readability takes from one parsed script, or None."""
    if isinstance(parsed, list):
        parsed = next((item for item in parsed if _is_article(item)), None)
        if parsed is None:
            return None
    if not isinstance(parsed, dict):
        return None
    context = parsed.get("@context")
    if isinstance(context, dict):
        context = context.get("@vocab")
    if not (isinstance(context, str) and _SCHEMA_ORG.fullmatch(context)):
        return None
    graph = parsed.get("@graph")
    if not parsed.get("@type") and isinstance(graph, list):
        parsed = next((item for item in graph if _is_article(item)), None)
    if not isinstance(parsed, dict) or not _is_article(parsed):
        return None
    return parsed


def _is_article(item: Any) -> bool:
    """Whether ``item``'s ``@type`` is an article type; raises _NotRead where Readability's test would throw
    (an item that is null, a type that is not a string: a list of types is not read)."""
    if item is None:
        raise _NotRead
    kind = item.get("@type") if isinstance(item, dict) else None
    if not kind:
        return False
    if not isinstance(kind, str):
        raise _NotRead
    return _ARTICLE_TYPE.search(kind) is not None


def _meta_title(tree: Any) -> str | None:
    values: dict[str, str] = {}
    for meta in tree.xpath("//meta"):
        content = meta.get("content")
        if not content:
            continue
        key = None
        property_ = meta.get("property")
        found = _PROPERTY.search(property_) if property_ else None
        if found:
            key = re.sub(_S, "", found.group(0).lower())
        else:
            name = meta.get("name")
            if name and _NAME.fullmatch(name):
                key = re.sub(_S, "", name.lower()).replace(".", ":")
        if key:
            values[key] = _trim(content)  # the last such tag counts
    return next((values[key] for key in _META_TITLES if values.get(key)), None)


def _cut_title_tag(tree: Any) -> str:
    """Readability's ``_getArticleTitle``: the ``<title>``, cut as the module docstring says."""
    whole = _document_title(tree)
    title = whole
    hierarchical = False
    if _SEPARATOR.search(title):
        hierarchical = _HIERARCHICAL.search(title) is not None
        last = list(_SEPARATOR.finditer(whole))[-1]
        title = whole[: last.start()]
        if _words(title) < 3:
            title = _UP_TO_FIRST_SEPARATOR.sub("", whole, count=1)
    elif ": " in title:
        headings = [_trim(h.text_content()) for h in tree.xpath("//h1 | //h2")]
        if _trim(title) not in headings:
            title = whole[whole.rfind(":") + 1 :]
            if _words(title) < 3:
                title = whole[whole.find(":") + 1 :]
            elif _words(whole[: whole.find(":")]) > 5:
                title = whole
    elif not 15 <= _js_length(title) <= 150:
        h1s = tree.xpath("//h1")
        if len(h1s) == 1:
            title = _RUNS_OF_SPACES.sub(" ", _trim(h1s[0].text_content()))
    title = _RUNS_OF_SPACES.sub(" ", _trim(title))
    words = _words(title)
    if words <= 4 and (not hierarchical or words != _words(_SEPARATOR_CHARS.sub("", whole)) - 1):
        title = whole
    return title


def _document_title(tree: Any) -> str:
    """``document.title``: the first ``<title>``'s own text, its spaces collapsed."""
    titles = tree.xpath("//title")
    if not titles:
        return ""
    text = (titles[0].text or "") + "".join(child.tail or "" for child in titles[0])
    return _trim(_HTML_SPACE.sub(" ", text))


def _similarity(a: str, b: str) -> float:
    """Readability's ``_textSimilarity``: 1 less the share of ``b``'s words (ASCII words) not in ``a``."""
    words_a = {w for w in _NOT_A_WORD.split(a.lower()) if w}
    words_b = [w for w in _NOT_A_WORD.split(b.lower()) if w]
    if not words_a or not words_b:
        return 0.0
    unique_b = [w for w in words_b if w not in words_a]
    return 1 - len(" ".join(unique_b)) / len(" ".join(words_b))


def unescape(text: str) -> str:
    """``text`` with the HTML character references left in it read as the characters they stand for."""
    text = _NAMED_REFERENCE.sub(lambda m: _NAMED[m.group(1)], text)
    return _NUMBERED_REFERENCE.sub(_character, text)


def _character(reference: re.Match[str]) -> str:
    hex_digits, digits = reference.groups()
    # A reference of more digits than any character has is past U+10FFFF (and not worth converting).
    significant = (hex_digits or digits).lstrip("0")
    if len(significant) > 7:
        return "\ufffd"
    number = int(hex_digits, 16) if hex_digits else int(digits)
    if number == 0 or number > 0x10FFFF or 0xD800 <= number <= 0xDFFF:
        return "\ufffd"  # as an HTML parser replaces these
    return chr(number)


def _words(text: str) -> int:
    return len(_SPACES.split(text))


def _trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def _js_length(text: str) -> int:
    """The length JavaScript gives ``text``: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2
