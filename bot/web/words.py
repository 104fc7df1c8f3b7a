"""Showing what a run held as a person reads it: labelled text as words with a tag naming whose they
are, and a tool's input or result as ``key: value`` lines (the page's JSON twin keeps them raw)."""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup, escape

from bot.consent import labelled_parts

__all__ = ["fields", "words"]

# Deeper than this, a value is shown as compact JSON: no tool result nests further in practice.
_DEPTH = 4
# A labelled part: its source in a tag, then its words (both escaped by Markup.format).
_THEIRS = Markup('<span class="theirs"><span class="tag source">someone else\'s words: {}</span> {}</span>')


def words(text: str | None) -> Markup:
    """``text`` escaped, each labelled part (``bot.consent.label``) shown as its words after a small tag
    naming its source ("someone else's words: web page") instead of the label's markup."""
    if not text:
        return Markup("")
    shown = []
    for source, said in labelled_parts(text):
        if source is None:
            shown.append(escape(said))
        else:
            shown.append(_THEIRS.format(source, said))
    return Markup("").join(shown)


def fields(value: Any) -> Markup:
    """A tool call's input or result (or a step's details) as ``key: value`` lines, nested ones indented,
    lists as numbered lines, text as :func:`words`."""
    return _value(value, 0)


def _value(value: Any, depth: int) -> Markup:
    if isinstance(value, dict) and value and depth < _DEPTH:
        rows = (
            Markup('<div><dt>{}:</dt><dd>{}</dd></div>').format(key, _value(item, depth + 1))
            for key, item in value.items()
        )
        return Markup('<dl class="fields">{}</dl>').format(Markup("").join(rows))
    if isinstance(value, list) and value and depth < _DEPTH:
        items = (Markup("<li>{}</li>").format(_value(item, depth + 1)) for item in value)
        return Markup('<ol class="fields">{}</ol>').format(Markup("").join(items))
    if isinstance(value, str):
        return Markup('<span class="text">{}</span>').format(words(value)) if value else Markup("(empty)")
    if isinstance(value, bool):
        return Markup("yes" if value else "no")
    if value is None or value == {} or value == []:
        return Markup("–")
    if isinstance(value, int | float):
        return escape(str(value))
    return escape(json.dumps(value, ensure_ascii=False, default=str))
