"""Reading and writing the YAML front matter at the top of a Markdown note."""

from __future__ import annotations

import re
from typing import Any

import yaml

_BLOCK = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


def parse(text: str) -> tuple[dict[str, Any], str]:
    """Split ``text`` into its front matter and body.

    Text without a well-formed front matter block, or whose block is not a YAML mapping,
    comes back whole as the body so nothing a person wrote is ever lost.
    """
    match = _BLOCK.match(text)
    if match is None:
        return {}, text
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}, text
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return {}, text
    return meta, text[match.end() :].lstrip("\r\n")


def render(meta: dict[str, Any], body: str) -> str:
    """The file text for ``meta`` and ``body``; no front matter block when ``meta`` is empty."""
    body = body.strip("\n") + "\n" if body.strip() else ""
    if not meta:
        return body
    block = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return f"---\n{block}---\n\n{body}"
