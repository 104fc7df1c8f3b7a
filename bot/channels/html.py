"""Markdown as HTML for the channels that show it (an e-mail's HTML part, Matrix's formatted body).

Raw HTML in the text is shown as text, never passed through, and a Markdown image becomes a plain link:
a client fetches an image's address the moment the message is shown, so an image would let words the
model was given (a forwarded newsletter, a clipped page) send data out with no click (consent, in
DESIGN.md).
"""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

__all__ = ["markdown_html"]

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def _image_as_link(renderer: Any, tokens: list[Any], index: int, options: Any, env: Any) -> str:
    """An image as a link to its address, its alt text as the link's words (the address when it has none)."""
    token = tokens[index]
    address = str(token.attrGet("src") or "")
    words = renderer.renderInlineAsText(token.children or [], options, env) or address
    return f'<a href="{escapeHtml(_MARKDOWN.normalizeLink(address))}">{escapeHtml(words)}</a>'


_MARKDOWN.add_render_rule("image", _image_as_link)


def markdown_html(text: str) -> str:
    """``text`` (Markdown) as HTML: no raw HTML, no image."""
    return _MARKDOWN.render(text)
