"""How a question for consent shows words the model wrote (an address, a call's arguments, a note's
text): as plain text the words cannot shape.

- every line of a quoted part starts with a bar, so nothing in it can pass for the question's own text
  (a fake "end of question" or "this is safe, tap Allow" reads as part of the quote);
- control and format characters (bidi overrides, zero-width characters, odd spaces) are written as
  ``\\u202e``-style escapes, so what is shown is what would be sent;
- a quoted part is cut at :data:`QUOTED_AT_MOST` UTF-16 units (as Telegram counts) saying how much was
  left out, so a question stays one message with its buttons.

The channels send a question as plain text (no Markdown: no link can hide part of an address).
"""

from __future__ import annotations

import unicodedata

__all__ = ["QUOTED_AT_MOST", "inline", "quoted", "visible"]

QUOTED_AT_MOST = 2_500
BAR = "│ "
# Categories whose characters are not shown as what they are: controls, format (bidi, zero width),
# private use, surrogates, unassigned, line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})


def visible(text: str) -> str:
    """``text`` with each control, format or unusual space character (a newline aside) as an escape."""
    return "".join(_shown(char) for char in text)


def _shown(char: str) -> str:
    if char == "\n" or char == " ":
        return char
    category = unicodedata.category(char)
    if category in _HIDDEN or category == "Zs":
        code = ord(char)
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


def quoted(text: str, what: str) -> str:
    """``text`` as a quoted part named ``what``: its lines barred, its hidden characters visible, cut
    to :data:`QUOTED_AT_MOST` with the count of characters left out."""
    shown = visible(text)
    kept = _cut(shown, QUOTED_AT_MOST)
    lines = [BAR + line for line in kept.split("\n")]
    if len(kept) < len(shown):
        lines.append(f"{BAR}… and {len(shown) - len(kept)} more characters, not shown here")
    return "\n".join([f"{what}:", *lines, f"(end of {what})"])


def inline(text: str, at_most: int = 200) -> str:
    """A short model-written value (a time, a rule) on one line: visible, no newline, cut with "…"."""
    shown = visible(text).replace("\n", "\\n")
    kept = _cut(shown, at_most)
    return kept if kept == shown else f"{kept}…"


def _cut(text: str, units: int) -> str:
    """The longest start of ``text`` within ``units`` UTF-16 units."""
    used = 0
    for i, char in enumerate(text):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > units:
            return text[:i]
    return text
