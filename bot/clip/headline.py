"""A page's title as a person would write it: its headline without the site's name.

Reader View's title (bot/clip/title.py) is right on about four pages in five that people titled: it takes the
first title a page states (often with the site's name on it: ``og:title`` "Story | Site") and passes over what
it does not read (a JSON-LD article whose ``@type`` is a list or sits in an ``@graph``, the ``<h1>`` the page
shows). What the page states in several places is more likely its headline than what it states once:

1. An ``<h1>`` of the page that one of its stated titles (the JSON-LD article's ``headline``, ``og:title``,
   ``twitter:title``, the ``<title>``) agrees with: the same words, or the same with a site's name, a section
   or a kicker ("Analysis:") joined to it by a separator. The ``<h1>`` is what the reader sees as the headline.
2. Else the stated title that another one agrees with, or the JSON-LD article's headline, or ``og:title``:
   each without the site's name it ends or starts with (and the sections of a few words beside it), where the
   site's name is one the page states (``og:site_name``, ``application-name``, the JSON-LD publisher or web
   site) or its host's.
3. Else, below the site's front page, where every stated title is the site's name: the article's heading.
4. Else Reader View's title.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any
from urllib.parse import urlsplit

from bot.clip.jsonld import article, kinds, objects
from bot.clip.title import reader_title, unescape

# What joins a headline to a site's name or a section: spaced bars, dashes, dots, slashes and guillemets, the
# full-width bar and colon (which need no spaces), and a spaced or closing colon.
_SEPARATOR = re.compile(r"\s+[|\-–—·•/»«:]+\s+|\s*[｜：]\s*|\s+--\s+|\s*::\s*|:\s+")
# A site's name glued to a headline by a bare hyphen or underscore, as Chinese sites write it (标题-新华网).
_GLUED_TAIL = re.compile(r"[-_|][^\s\-_|]{1,12}")
# A site's name in brackets after a headline: "Headline [LWN.net]", "Headline (Maurycy's blog)".
_BRACKETED_TAIL = re.compile(r"\s*[\[(（＜<【][^\])）＞>】]{1,40}[\])）＞>】]")
# A Chinese site's name and sections joined by underscores: "标题_科技_腾讯网".
_UNDERSCORED_SITE = re.compile(r"(?:\s*_[^\s_]{1,8}){0,2}\s*_[^\s_]{1,8}网$")
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " ", "´": "'", "`": "'"})
_DANGLING = " |-–—·•:｜："  # a separator left at an end, where a site's name was cut off
_OUTSIDE = ("nav", "footer", "aside")
_HEADLINE_WORDS = 60  # an <h1> longer than this is a block of text, not a headline
_SITE_WORDS = 6  # a site's name or a section is a few words
_SECTION_WORDS = 3  # a section's name beside a site's ("Chroniques", "Blog", "Tagesanalyse")
_HEADINGS = 5  # the headline is among a page's first <h1>s
_PARTS = 8  # a title of more parts than this is not a headline with a site's name on it


def page_title(tree: Any, scripts: list[Any], sites: set[str], authors: list[str], url: str) -> str | None:
    """The title of the page ``tree`` at ``url`` whose parsed JSON-LD is ``scripts``, whose site is named
    ``sites`` (:func:`site_names`) and whose authors are ``authors`` (a title may end with an author's name as
    with a site's) (module docstring); None when the page states none."""
    sites = sites | {_key(name).replace(" ", "") for name in authors}
    headline, metas = _ld_headline(scripts), _meta_titles(tree)
    stated = [unescape(t).strip(_DANGLING) for t in (headline, *metas, _title_tag(tree)) if t]
    agreeing = [_Stated.of(title, _without_site(title, sites)) for title in stated]
    # Of the headings a stated title agrees with, the one it starts with ("Headline | Site"), else the longest.
    headings = [h for h in islice(_headings(tree), _HEADINGS) if not is_site_name(h, sites)]
    fits = [(rank, heading) for heading in headings for rank in _ranks(heading, agreeing)]
    if fits:
        heading = max(fits, key=lambda fit: fit[0])[1]
        # A heading in capitals is mostly the site's style ("INTERNATIONALE FORDERUNGSBEITREIBUNG"): the words
        # as a stated title writes them.
        cased = (bare for bare in (_without_site(title, sites) for title in stated) if _key(bare) == _key(heading))
        return next((bare for bare in cased if not bare.isupper()), heading) if heading.isupper() else heading
    # A heading that is a stated title's last part but not its headline is the site's name ("<h1>antirez</h1>").
    sites |= {_key(h).replace(" ", "") for h in headings if any(_words(_key(h)) in told.parts[1:] for told in agreeing)}
    bare = [_without_site(title, sites) for title in stated]
    agreeing = [_Stated.of(title, plain) for title, plain in zip(stated, bare, strict=True)]
    titles = [(told, title) for told, title in zip(agreeing, bare, strict=True) if not is_site_name(title, sites)]
    for told, title in titles:
        if any(other.agrees(_key(title)) is not None for other, _ in titles if other is not told):
            return title
    # A headline stated once: the JSON-LD article's, else og:title's, else a <title> a site's name came off.
    if titles and (headline or metas or titles[0][1] != stated[-1]):
        return titles[0][1]
    if stated and not titles and urlsplit(url).path.strip("/"):
        # Every title a page below the site's front page states is its site's name ("<title>MEDEF</title>"): the
        # article's heading is the headline, an <h1> else the first <h2>.
        named = (h for h in (*headings, *_headings(tree, "h2")) if not is_site_name(h, sites))
        return next(named, None) or reader_title(tree, scripts)
    return reader_title(tree, scripts)


@dataclass(frozen=True)
class _Stated:
    """A stated title as a heading is compared with it: whole, without the site's name, and in its parts."""

    whole: str
    bare: str
    parts: list[str]

    @classmethod
    def of(cls, title: str, bare: str) -> _Stated:
        parts = [_words(_key(p)) for p in _SEPARATOR.split(title)]
        return cls(_key(title), _key(bare), parts if len(parts) <= _PARTS else [])

    def agrees(self, heading: str) -> tuple[bool, int] | None:
        """Whether this is ``heading``, or ``heading`` with a few words joined to it by separators: None if
        not, else whether it starts this title and its length."""
        if not heading or _words(heading) not in _words(self.whole):
            return None
        rest = self.whole.removeprefix(heading)
        if heading in (self.whole, self.bare) or _GLUED_TAIL.fullmatch(rest) or _BRACKETED_TAIL.fullmatch(rest):
            return (True, len(heading))
        wanted = _words(heading)
        for start in range(len(self.parts)):
            for end in range(start + 1, len(self.parts) + 1):
                if " ".join(self.parts[start:end]) == wanted:
                    rest = self.parts[:start] + self.parts[end:]
                    if any(len(p.split()) > _SITE_WORDS for p in rest):
                        return None
                    # After a separator a heading is the headline only if it says more than what came before it:
                    # "Analysis: The nonstop sparring match", not "Scaling HNSWs - <antirez>".
                    if start > 0 and len(wanted.split()) <= sum(len(p.split()) for p in rest):
                        return None
                    return (start == 0, len(heading))
        return None


def _ranks(heading: str, agreeing: list[_Stated]) -> Iterator[tuple[bool, int]]:
    key = _key(heading)
    return (rank for told in agreeing if (rank := told.agrees(key)) is not None)


def _words(key: str) -> str:
    """A compared title's words, its separators left out."""
    return " ".join(_SEPARATOR.sub(" ", key).split())


def _without_site(title: str, sites: set[str]) -> str:
    """``title`` less a site's name (or a section beside it) that starts or ends it after a separator."""
    parts = _SEPARATOR.split(title)
    if len(parts) < 2:
        return _strip_glued(title, sites)
    marks = _SEPARATOR.findall(title)
    # "Headline | Site", "Headline – Site – Blog", "Headline | Section | Site": the site's name and the few
    # words of sections beside it end the title (within its last few parts: a title of thousands costs no more).
    for start in range(max(1, len(parts) - _PARTS), len(parts)):
        tail = parts[start:]
        if any(is_site_name(part, sites) for part in tail) and all(
            is_site_name(part, sites) or _word_count(part) <= _SECTION_WORDS for part in tail
        ):
            parts, marks = parts[:start], marks[: start - 1]
            break
    # "Site: Headline" is as often "Topic: Headline": a colon parts off only a site's address.
    while len(parts) > 1 and is_site_name(parts[0], sites) and (":" not in marks[0] or "." in parts[0]):
        parts, marks = parts[1:], marks[1:]
    kept = parts[0] + "".join(mark + part for mark, part in zip(marks, parts[1:], strict=True))
    return _strip_glued(" ".join(kept.split()), sites)


def _word_count(part: str) -> int:
    """The words of ``part``, a lone dot or bullet between them aside ("Webentwicklung . AutoCAD")."""
    return sum(1 for word in part.split() if any(ch.isalnum() for ch in word))


def _strip_glued(title: str, sites: set[str]) -> str:
    """``title`` less a site's name glued on by a bare hyphen (``标题-新华网``) or underscores
    (``标题_科技_腾讯网``)."""
    head, dash, tail = title.rpartition("-")
    if dash and head.strip() and is_site_name(tail, sites):
        return head.strip()
    unglued = _UNDERSCORED_SITE.sub("", title).strip()
    return unglued or title


def is_site_name(part: str, sites: set[str]) -> bool:
    """Whether ``part`` of a title or a byline is one of ``sites`` (:func:`site_names`)."""
    key = _key(part).replace(" ", "")
    return bool(key) and any(
        key == site or (min(len(site), len(key)) >= 4 and (site in key or key in site) and len(key) < 2 * len(site))
        for site in sites
    )


def site_names(tree: Any, scripts: list[Any], url: str) -> set[str]:
    """The names the page at ``url`` gives its site (``og:site_name``, ``application-name``, ``twitter:site``,
    the JSON-LD web site, organisation or publisher), and its host's, as :func:`is_site_name` compares them."""
    names = [
        str(v)
        for v in tree.xpath(
            "//meta[@property='og:site_name' or @name='og:site_name' or @name='application-name'"
            " or @name='apple-mobile-web-app-title' or @name='twitter:site' or @property='twitter:site']/@content"
        )
    ]
    for item in objects(scripts):
        if any(k in ("WebSite", "Organization", "NewsMediaOrganization") for k in kinds(item)):
            names.append(str(item.get("name") or ""))
        publisher = item.get("publisher")
        if isinstance(publisher, dict):
            names.append(str(publisher.get("name") or ""))
    host = (urlsplit(url).hostname or "").removeprefix("www.")
    names += [host, host.split(".")[0]] if host else []
    return {k for k in (_key(n.lstrip("@")).replace(" ", "") for n in names) if k}


def _headings(tree: Any, tag: str = "h1") -> Iterator[str]:
    for heading in tree.xpath(f"//{tag}"):
        outer = [element.tag for element in heading.iterancestors()]
        # A <header> is the site's unless it is the article's own (inside its <article> or <main>).
        if any(tag in _OUTSIDE for tag in outer) or ("header" in outer and not {"article", "main"} & set(outer)):
            continue
        text = " ".join(heading.text_content().split()).strip("¶#§ ")
        if text and len(text.split()) <= _HEADLINE_WORDS:
            yield text


def _ld_headline(scripts: list[Any]) -> str | None:
    """The first JSON-LD article's ``headline`` (else its ``name``), wherever the scripts nest it."""
    found = article(scripts)
    for key in ("headline", "name"):
        value = found.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return None


def _meta_titles(tree: Any) -> list[str]:
    values = tree.xpath(
        "//meta[@property='og:title' or @name='og:title' or @name='twitter:title' or @property='twitter:title'"
        " or @name='parsely-title' or @name='dc.title' or @name='DC.title' or @name='citation_title']/@content"
    )
    return [" ".join(str(v).split()) for v in values if str(v).strip()]


def _title_tag(tree: Any) -> str | None:
    titles = tree.xpath("//title")
    return " ".join(titles[0].text_content().split()) or None if titles else None


def _key(text: str) -> str:
    """``text`` as titles are compared: case, quotes and spacing aside."""
    return " ".join(text.translate(_QUOTES).casefold().split())
