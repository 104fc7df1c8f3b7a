"""A page's JSON-LD: its scripts parsed, the objects in them, and the article among them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

# schema.org's article types and the ones a page uses for an article's page (a recipe, a how-to).
_ARTICLE = re.compile(r"Article|Posting|Report|Review|Recipe|HowTo", re.IGNORECASE)


def scripts_of(tree: Any) -> list[Any]:
    """The page's JSON-LD scripts, each parsed, in the page's order; a script that is not JSON is left out."""
    scripts = []
    for script in tree.xpath("//script[@type='application/ld+json']"):
        text = re.sub(r"^\s*<!\[CDATA\[|\]\]>\s*$", "", script.text_content())
        try:
            scripts.append(json.loads(text, strict=False))  # strict=False: a raw line break inside a string
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
            continue
    return scripts


def objects(scripts: list[Any]) -> Iterator[dict[str, Any]]:
    """Every object of ``scripts`` in the page's order, in lists and ``@graph``s as far as four deep."""
    stack: list[tuple[Any, int]] = [(data, 0) for data in reversed(scripts)]
    while stack:
        data, depth = stack.pop()
        if depth > 4:  # a page's JSON-LD is shallow; a deep one is not worth the walk
            continue
        if isinstance(data, list):
            stack.extend((item, depth + 1) for item in reversed(data))
        elif isinstance(data, dict):
            yield data
            stack.append((data.get("@graph"), depth + 1))


def kinds(item: dict[str, Any]) -> list[str]:
    """``item``'s ``@type``s (one, or a list of them)."""
    kind = item.get("@type")
    return [k for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str)]


def article(scripts: list[Any]) -> dict[str, Any]:
    """The page's first JSON-LD article (any article type, or a list of types with one), else empty."""
    return next((item for item in objects(scripts) if any(_ARTICLE.search(k) for k in kinds(item))), {})
