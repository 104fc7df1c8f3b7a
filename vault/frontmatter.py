"""Reading and writing the YAML front matter at the top of a Markdown note."""

from __future__ import annotations

import re
from typing import Any

import yaml

# libyaml when the wheel has it (about ten times faster); the pure-Python classes otherwise.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FastDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_BLOCK = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


def parse(text: str) -> tuple[dict[str, Any], str]:
    """Split ``text`` into its front matter and body.

    Text without a well-formed front matter block, or whose block is not a YAML mapping,
    comes back whole as the body so nothing a person wrote is ever lost.
    """
    # Editors on Windows may start the file with a byte order mark; it must not hide the block.
    unmarked = text.removeprefix("\ufeff")
    match = _BLOCK.match(unmarked)
    if match is None:
        return {}, text
    try:
        meta = yaml.load(match.group(1), Loader=_Loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        return {}, text
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return {}, text
    return meta, unmarked[match.end() :].lstrip("\r\n")


def render(meta: dict[str, Any], body: str) -> str:
    """The file text for ``meta`` and ``body``; no front matter block when ``meta`` is empty."""
    return _render(meta, body)[0]


def render_parsed(meta: dict[str, Any], body: str) -> tuple[str, dict[str, Any], str]:
    """``render(meta, body)``, and what :func:`parse` of that text gives, without reading the YAML
    back when its values are printable: the block then reads back as ``meta``.

    Safe YAML gives back the printable strings, numbers and lists it wrote, and the emitter indents
    every line of a value, so no line inside the block starts with ``---``. Control characters and
    line breaks (the pure-Python emitter folds U+0085 into a space) are read back to be sure.
    """
    text, block_end = _render(meta, body)
    if not meta or not _printable(meta):
        return text, *parse(text)  # without a block, the body may start with one of its own
    return text, meta, text[block_end:].lstrip("\r\n")


def _render(meta: dict[str, Any], body: str) -> tuple[str, int]:
    """The file text, and where its front matter block ends (0 without one)."""
    body = body.strip("\n") + "\n" if body.strip() else ""
    if not meta:
        return body, 0
    # libyaml writes characters beyond the BMP (emoji) as "\U0001F36E" escapes, which a person
    # reading the note in Obsidian should not see; the pure-Python dumper keeps them as they are.
    dumper = yaml.SafeDumper if _beyond_bmp(meta) else _FastDumper
    block = yaml.dump(meta, Dumper=dumper, sort_keys=False, allow_unicode=True)
    head = f"---\n{block}---\n"
    return f"{head}\n{body}", len(head)


def _beyond_bmp(value: Any) -> bool:
    if isinstance(value, str):
        return max(value, default="\0") > "\uffff"
    if isinstance(value, dict):
        return any(_beyond_bmp(k) or _beyond_bmp(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_beyond_bmp(v) for v in value)
    return False


def _printable(value: Any) -> bool:
    if isinstance(value, str):
        return value.isprintable()
    if isinstance(value, dict):
        return all(_printable(k) and _printable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_printable(v) for v in value)
    return True
