"""``clip_link``: a web page filed as a Markdown note in the clip folder (``bot.clip``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

import vault
from bot.clip import ClipError, Clipper
from bot.consent import Provenance, with_sources
from bot.tools.base import ContentResult
from bot.tools.context import ToolContext
from bot.tools.errors import ToolError
from bot.tools.schemas import ToolInput


class ClipLinkInput(ToolInput):
    """Clip a web page into the vault."""

    url: str = Field(min_length=1, max_length=4000, description="The http(s) address of the page.")
    folder: str | None = Field(None, description="Vault folder for the note; default the clip folder.")


class ClipLink:
    """Fetch a page and file its main content as a note."""

    name = "clip_link"
    description = (
        "Fetch a web page (or a plain-text or PDF link) and file its main content as a Markdown note in the "
        "clip folder, named after the page's title, with its source, author and date. The same URL again "
        "returns the note filed before. Returns the note's path, the title, an excerpt and the word count."
    )
    input_model = ClipLinkInput

    def __init__(self, clipper: Clipper, provenance: Provenance | None = None) -> None:
        self._clipper = clipper
        self._provenance = provenance

    async def run(self, input: ClipLinkInput, context: ToolContext) -> ContentResult:
        """Clip the page and say where it went."""
        try:
            clipping = await self._clipper.clip(input.url, input.folder)
        except ClipError as exc:
            raise ToolError(str(exc), error_type=exc.error_type, retryable=exc.retryable) from exc
        except vault.VaultError as exc:
            raise ToolError(str(exc), error_type="vault_error") from exc
        if clipping.change is not None:
            context.changes.add(with_sources(clipping.change, {"web page", *context.sources}))
            if self._provenance is not None:  # a page's words, in whatever folder: kept as the page's
                await self._provenance.keep(
                    run_id=context.run_id,
                    path=clipping.path,
                    kind=clipping.change.kind,
                    text=clipping.text,
                    sources={"web page", *context.sources},
                )
        result: dict[str, Any] = {
            "success": True,
            "path": clipping.path,
            "title": clipping.title,
            "excerpt": clipping.excerpt,
            "words": clipping.words,
            "source": clipping.source,
        }
        if clipping.left_out is not None:
            result["left_out"] = f"Only part of the PDF could be read and clipped: {clipping.left_out}."
        return ContentResult(result, untrusted="web page")
