"""Notes the assistant wrote: which runs touched each one, and its current content, rendered."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from bot.web.sources import sources
from vault import VaultError
from vault.frontmatter import parse
from vault.paths import confine

PAGE_SIZE = 50


async def note_list(request: Request) -> Response:
    """Every note written, a page at a time, newest write first, each with the run that wrote it;
    ``before`` pages to older notes, ``after`` to newer ones."""
    review = sources(request)
    found = await review.reader.notes(
        before=request.query_params.get("before"), after=request.query_params.get("after"), limit=PAGE_SIZE
    )
    data = {"notes": found.notes, "older": found.older, "newer": found.newer}
    return review.renderer.page(request, "notes.html", data)


async def note_page(request: Request) -> Response:
    """One note: its path, the runs that wrote it, its content as it is on disk now."""
    review = sources(request)
    path = request.path_params["path"]
    root = review.settings.vault.path
    touched = await review.reader.runs_of_note(path)
    content = await asyncio.to_thread(_read, root, path)
    if content is None and not touched:
        return review.renderer.page(request, "missing.html", {"what": f"note {path}"}, status=404)
    data = {
        "path": path,
        "runs": touched,
        "note": content,
        "obsidian": obsidian_link(root, path),
    }
    return review.renderer.page(request, "note.html", data)


def obsidian_link(root: Path, path: str) -> str:
    """An ``obsidian://open`` address for the note at vault-relative ``path``."""
    vault = root.resolve().name
    file = path[:-3] if path.endswith(".md") else path
    return f"obsidian://open?vault={quote(vault, safe='')}&file={quote(file, safe='')}"


def _read(root: Path, path: str) -> dict[str, Any] | None:
    """The note's front matter and body, or None when it is not (or no longer) in the vault."""
    try:
        found = confine(root.resolve(), path)
        text = found.read_text(encoding="utf-8")
    except (VaultError, OSError, UnicodeDecodeError):
        return None
    front, body = parse(text)
    return {"frontmatter": front, "body": body}
