"""HTML mail as Markdown-like text, in one pass: time linear in the HTML's length.

Links, lists, emphasis and quotes are kept as Markdown (``[text](address)``, ``- item``, ``**bold**``,
``> quoted``); images, scripts, styles and the head are left out. Text a person reading the mail does not
see (``display:none``, ``visibility:hidden``, zero size or opacity, the ``hidden`` attribute,
``aria-hidden``) is left out too, and the text says how much: words hidden from the person are a way to
speak to the model alone. Nesting deeper than :data:`MAX_DEPTH` reads on as flat text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

MAX_DEPTH = 100
_SKIPPED = {"script", "style", "head", "title", "template", "noscript", "svg", "math", "object", "iframe"}
_BLOCKS = {"p", "div", "section", "article", "header", "footer", "table", "tr", "ul", "ol", "h1", "h2", "h3"}
_BLOCKS |= {"h4", "h5", "h6", "blockquote", "pre", "hr", "dl", "dt", "dd", "center", "form"}
_VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "col", "area", "base", "source", "track", "embed"}
_EMPHASIS = {"b": "**", "strong": "**", "i": "_", "em": "_"}
_HIDING = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|opacity\s*:\s*0(?:\.0*)?\s*(?:;|$)|"
    r"(?:font-size|max-height|height|width|line-height)\s*:\s*0(?:px|em|rem|pt|%)?\s*(?:!important)?\s*(?:;|$)",
    re.IGNORECASE,
)


def html_text(html: str) -> str:
    """``html`` as text (see the module's docstring)."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    text = re.sub(r"[ \t]+\n", "\n", "".join(reader.out))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if reader.hidden_chars:
        text += f"\n\n[vaultbot: {reader.hidden_chars:,} characters of text hidden in the HTML were left out.]"
    return text


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.hidden_chars = 0
        self._open: list[tuple[str, bool, str]] = []  # (tag, hides or skips, what closes it)
        self._hiding = 0  # open elements that hide their text
        self._quotes = 0
        self._lists = 0
        self._at_line_start = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if tag == "br":
                self._newline()
            elif tag == "hr":
                self._block("\n---\n")
            return
        values = dict(attrs)
        hides = tag in _SKIPPED or _hidden(values)
        closing = ""
        if not self._hiding and not hides:
            closing = self._open_visible(tag, values)
        if len(self._open) >= MAX_DEPTH:
            # Too deep to follow where it ends: hidden text there hides all that follows.
            self._hiding += hides and not self._hiding
            return
        self._open.append((tag, hides, closing))
        self._hiding += hides
        if tag == "blockquote" and not hides:
            self._quotes += 1
        if tag in ("ul", "ol") and not hides:
            self._lists += 1

    def _open_visible(self, tag: str, values: dict[str, str | None]) -> str:
        """Write what opens ``tag``; return what closes it."""
        if tag in ("ul", "ol") and self._lists:
            self._line()  # a list inside a list item: on the next line, no blank one
        elif tag in _BLOCKS:
            self._block()
        if tag == "li":
            self._line()
            self._write("  " * max(self._lists - 1, 0) + "- ")
        elif tag in _EMPHASIS:
            self._write(_EMPHASIS[tag])
            return _EMPHASIS[tag]
        elif tag == "a" and (values.get("href") or "").strip():
            self._write("[")
            return f"]({(values.get('href') or '').strip()})"
        elif tag in ("h1", "h2", "h3"):
            self._write("#" * int(tag[1]) + " ")
        return ""

    def handle_endtag(self, tag: str) -> None:
        # Only the innermost few open elements are looked at: a stray end tag costs a bounded search.
        for index in range(len(self._open) - 1, max(len(self._open) - 8, -1), -1):
            if self._open[index][0] == tag:
                while len(self._open) > index:
                    self._close(*self._open.pop())
                return

    def _close(self, tag: str, hides: bool, closing: str) -> None:
        self._hiding -= hides
        if hides:
            return
        if closing:
            self._write(closing)
        if tag == "blockquote":
            self._quotes -= 1
        if tag in ("ul", "ol"):
            self._lists -= 1
        if tag == "li" or (tag in ("ul", "ol") and self._lists):
            self._line()
        elif tag in _BLOCKS:
            self._block()

    def handle_data(self, data: str) -> None:
        if self._hiding:
            self.hidden_chars += len(data.strip())
            return
        text = re.sub(r"\s+", " ", data)
        if self._at_line_start:
            text = text.lstrip()
        if text:
            self._write(text)

    def _write(self, text: str) -> None:
        if self._at_line_start and self._quotes:
            self.out.append("> " * self._quotes)
        self.out.append(text)
        self._at_line_start = False

    def _newline(self) -> None:
        self.out.append("\n")
        self._at_line_start = True

    def _line(self) -> None:
        if not self._at_line_start:
            self._newline()

    def _block(self, text: str = "") -> None:
        if not self._at_line_start:
            self.out.append("\n")
        self.out.append("\n" + text if text else "\n")
        self._at_line_start = True


def _hidden(values: dict[str, str | None]) -> bool:
    if "hidden" in values or (values.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return _HIDING.search(values.get("style") or "") is not None
