"""Who wrote a page and when it was published, as the page states them.

Authors: the JSON-LD article's ``author`` (a name, a person, a list of them), else the head's author tags
(``author``, ``article:author``, ``byl``, ``parsely-author``, ``sailthru.author``, ``dc.creator``,
``citation_author``), else the page's byline ("By …", "Von …", "durch …", "Par …" in a ``byline`` element,
``rel=author``, ``itemprop=author``), never in its comments; the extractor's guess comes last
(:func:`names_in`), as it may be a commenter's name. An organisation, a content system's account ("Super
User") and an agency's acronym beside a person's name are no authors.

The date: the head's publication tags, the JSON-LD article's ``datePublished``, an ``itemprop=datePublished``
(written in numbers or with a month's name in English, Spanish, French, German, Italian or Portuguese), a date
in the address (``/2013/11/27/``), else the original date htmldate finds in the page (its bylines, its text, in
many languages), else a ``<time>`` of the article's own, in that order. htmldate comes after the statements
as it reads dates from anywhere (measured in bench/clip.py: docs/clipping-and-documents.md).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from htmldate import find_date

_AUTHOR_META = (
    "//meta[@name='author' or @property='author' or @name='Author']/@content",
    "//meta[@property='article:author' or @name='article:author']/@content",
    "//meta[@name='byl' or @name='parsely-author' or @name='sailthru.author' or @name='cXenseParse:author']/@content",
    "//meta[@name='dc.creator' or @name='DC.creator' or @name='dcterms.creator' or @name='citation_author']/@content",
)
_BYLINE = (
    "//*[@itemprop='author']//*[@itemprop='name'] | //a[@rel='author']"
    " | //*[contains(concat(' ', normalize-space(@class), ' '), ' byline ')]"
    " | //*[contains(@class, 'author-name') or contains(@class, 'byline__name') or contains(@class, 'byline-name')"
    " or contains(@class, 'meta-author')]"
)
_BY = re.compile(r"^\s*(?:by|von|durch|par|por|door|di|av|af|autor(?:es|en|i)?|authors?|written by)\b\s*:?\s*", re.I)
_SPLIT = re.compile(r"\s*(?:;|,|\band\b|\bund\b|\bet\b|\by\b|&|\|)\s*")
_NOT_A_NAME = re.compile(
    r"https?://|www\.|@|\d{3}|\bupdated\b|\bpublished\b|\bposted\b|\bsubmitted\b"
    # A content system's account or a newsroom's, not a person: "Super User", "Administrator", "Times Staff".
    r"|^(?:admin(?:istrator)?|super ?user|webmaster|editor|redaktion|rédaction|redacción|guest)$|\bstaff\b",
    re.I,
)
_NAME_WORDS = 5
_ACRONYM = 5  # letters of an agency's or a firm's short name at most (AP, CMS, AFP)

_DATE_META = (
    "//meta[@property='article:published_time' or @name='article:published_time']/@content",
    "//meta[@property='og:article:published_time' or @property='og:published_time']/@content",
    "//meta[@itemprop='datePublished']/@content",
    "//meta[@name='pubdate' or @name='publishdate' or @name='publish-date' or @name='date' or @name='Date']/@content",
    "//meta[@name='parsely-pub-date' or @name='sailthru.date' or @name='article.published']/@content",
    "//meta[@name='DC.date.issued' or @name='dc.date.issued' or @name='DC.date' or @name='dc.date']/@content",
    "//meta[@name='dcterms.created' or @name='dcterms.date' or @name='citation_publication_date']/@content",
    "//meta[@name='citation_date' or @name='publication_date' or @name='OriginalPublicationDate']/@content",
)
_DATE_MARKUP = "//*[@itemprop='datePublished']/@datetime | //*[@itemprop='datePublished']/@content"
# A <time> inside these is about something else (a list of other articles, a table's row, the footer).
_ELSEWHERE = {"table", "aside", "nav", "footer", "ul", "ol", "form"}
_ISO = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
# Each month's names' first three letters, in English, Spanish, French, German, Italian and Portuguese.
_MONTHS = (
    ("jan", "ene", "gen"),
    ("feb", "fév", "fev"),
    ("mar", "mär"),
    ("apr", "abr", "avr"),
    ("may", "mai", "mag"),
    ("jun", "jui", "giu"),
    ("jul", "lug"),
    ("aug", "ago", "aoû"),
    ("sep", "set"),
    ("oct", "okt", "out", "ott"),
    ("nov",),
    ("dec", "dic", "déc", "dez"),
)
_MONTH = r"([^\W\d_]{3,10})"
_NAMED = re.compile(
    rf"\b{_MONTH}\.? (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b|\b(\d{{1,2}})\.? (?:de )?{_MONTH}\.? (?:de )?(\d{{4}})\b"
)
_IN_ADDRESS = re.compile(r"/((?:19|20)\d{2})[/-](\d{2})/(\d{2})/")


def authors(tree: Any, article: dict[str, Any]) -> list[str]:
    """The authors the page states (module docstring), each once, as the page writes them."""
    stated = _ld_authors(article.get("author"))
    if not stated:
        for query in _AUTHOR_META:
            stated = [name for value in tree.xpath(query) for name in _names(str(value))]
            if stated:
                break
    if not stated:
        for element in tree.xpath(_BYLINE):
            if _in_comments(element):
                continue
            stated = _names(element.text_content())
            if stated:
                break
    # "Martin Gerecke, CMS": an acronym beside a person's name is their firm or agency.
    people = [name for name in stated if not (name.isupper() and " " not in name and len(name) <= _ACRONYM)]
    return list(dict.fromkeys(people or stated))


def _in_comments(element: Any) -> bool:
    """Whether ``element`` is in the page's comments, where a byline is a commenter's."""
    return any(
        "comment" in f"{outer.get('class', '')} {outer.get('id', '')}".lower() for outer in element.iterancestors()
    )


def _ld_authors(value: Any) -> list[str]:
    if isinstance(value, str):
        return _names(value)
    if isinstance(value, dict):
        # An organisation is the publisher writing its own name in, not a person who wrote the article.
        if "Organization" in str(value.get("@type")) or not isinstance(value.get("name"), str):
            return []
        return _names(value["name"])
    if isinstance(value, list):
        return [name for item in value[:20] for name in _ld_authors(item)]
    return []


def names_in(byline: str | None, tree: Any) -> list[str]:
    """The names in the extractor's ``byline`` of the page ``tree`` ("By Ann Lee and Bo Chan, CNN" gives Ann
    Lee, Bo Chan and CNN), less a name the page writes only in its comments (a commenter's)."""
    names = dict.fromkeys(_names(byline)) if byline else {}
    return [name for name in names if not all(map(_in_comments, tree.xpath("//*[contains(text(), $n)]", n=name)))]


def _names(text: str) -> list[str]:
    text = _BY.sub("", " ".join(text.split()))
    names = []
    for part in _SPLIT.split(text):
        name = _BY.sub("", part).strip(" .:-–—|")
        if name and not _NOT_A_NAME.search(name) and len(name.split()) <= _NAME_WORDS:
            names.append(name)
    return names


def published(tree: Any, article: dict[str, Any], url: str) -> str | None:
    """The date the page says it was published (YYYY-MM-DD), as the module docstring says; None when it
    says none."""
    statements = [str(value) for query in _DATE_META for value in tree.xpath(query)]
    statements.append(str(article.get("datePublished") or article.get("dateCreated") or ""))
    statements += [str(value) for value in tree.xpath(_DATE_MARKUP)]
    for statement in statements:
        found = date_in(statement)
        if found:
            return found
    address = _IN_ADDRESS.search(url)
    if address:
        return date_in("-".join(address.groups()))
    # htmldate weighs the dates a page writes in its markup and text ("Published 3 March 2024", a byline's
    # "12.06.2019"), in a copy of the page (its cleaning prunes the tree) less the parts about something else.
    found = find_date(_without_elsewhere(tree), url=url, extensive_search=True, original_date=True)
    # It makes the 1st of January of a year it finds alone ("/2013/" in the address): no date the page states.
    found = None if found and found.endswith("-01-01") else found
    return found or next(filter(None, map(date_in, _own_times(tree))), None)


def _without_elsewhere(tree: Any) -> Any:
    """A copy of ``tree`` less its tables, navigation, footer and forms, whose dates are others' (an infobox's
    founding date, a list of other articles, the footer's year), but for one that holds most of the page's
    text: the page's layout, not a part of it."""
    pruned = copy.deepcopy(tree)
    whole = len(pruned.text_content())
    for element in pruned.xpath("//table | //nav | //footer | //form"):
        if element.getparent() is not None and len(element.text_content()) < whole / 2:
            element.drop_tree()
    return pruned


def _own_times(tree: Any) -> list[str]:
    """The first ``<time datetime>`` of the article's own (not in a list of other articles or the footer)."""
    for time in tree.xpath("//time[@datetime]"):
        if not any(outer.tag in _ELSEWHERE for outer in time.iterancestors()):
            return [str(time.get("datetime"))]
    return []


def date_in(statement: str) -> str | None:
    """The first date written in ``statement`` as YYYY-MM-DD ("2019-11-20T13:42", "November 20, 2019",
    "20 Nov 2019", "09 enero 2014"), or None."""
    found = _ISO.search(statement)
    if found:
        return _date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    named = _NAMED.search(statement)
    if named:
        month, day, year = (named.group(1), named.group(2), named.group(3))
        if month is None:
            day, month, year = named.group(4), named.group(5), named.group(6)
        number = next((i for i, names in enumerate(_MONTHS, 1) if month.casefold()[:3] in names), 0)
        return _date(int(year), number, int(day))
    return None


def _date(year: int, month: int, day: int) -> str | None:
    return f"{year:04d}-{month:02d}-{day:02d}" if 1 <= month <= 12 and 1 <= day <= 31 and year > 1900 else None
