"""The four vault tools: thin adapters from tool inputs to the ``vault`` library.

The library is synchronous, so every call runs in a worker thread; its exceptions become
``ToolError`` values with a type the model and the error tracker can act on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import vault
from bot.clock import unstamp
from bot.consent import Provenance, note_source, with_sources
from bot.consent.embeds import unlinked
from bot.images import IMAGE_SOURCE, Prepared, Unshowable, image_block, is_image_path, prepare
from bot.tools.base import ContentResult
from bot.tools.context import ToolContext
from bot.tools.errors import ToolError
from bot.tools.schemas import VaultListInput, VaultReadInput, VaultSearchInput, VaultWriteInput
from vault.paths import show

T = TypeVar("T")

# Which vault failures a retry cannot fix; anything else from the disk may be passing.
_ERROR_TYPES: dict[type[vault.VaultError], str] = {
    vault.PathNotAllowed: "path_not_allowed",
    vault.NoteNotFound: "not_found",
    vault.NoteExists: "already_exists",
    vault.NoteChanged: "changed_on_disk",
    vault.InvalidNote: "invalid_input",
    vault.NotRead: "not_read",
}

log = logging.getLogger(__name__)


async def _in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except vault.VaultError as exc:
        error_type = next((t for cls, t in _ERROR_TYPES.items() if isinstance(exc, cls)), "vault_error")
        raise ToolError(str(exc), error_type=error_type) from exc
    except OSError as exc:
        raise ToolError(
            f"The vault's disk refused the operation ({exc.strerror or type(exc).__name__}); try again later.",
            error_type="storage_error",
            retryable=True,
        ) from exc


class _VaultTool:
    """A tool over one vault. ``foreign`` names the folders whose notes hold someone else's words (the clip
    folder, the attachments): what the tool returns from them reaches the model labelled as such, as
    does any text that holds words a tainted run wrote (``provenance``, by content wherever they are)."""

    def __init__(
        self, notes: vault.Vault, foreign: dict[str, str] | None = None, provenance: Provenance | None = None
    ) -> None:
        self._vault = notes
        self._foreign = {f"{folder.strip('/').casefold()}/": source for folder, source in (foreign or {}).items()}
        self._provenance = provenance

    def _source(self, paths: list[str]) -> str | None:
        """Where the words at ``paths`` came from, when any of them is in a foreign folder."""
        for path in paths:
            folded = path.casefold()
            for folder, source in self._foreign.items():
                if folded.startswith(folder):
                    return source
        return None

    async def _result(
        self, result: dict[str, Any], paths: list[str], shown: str = "", *, titles: bool = False
    ) -> dict[str, Any] | ContentResult:
        """``result`` labelled when its notes are in a foreign folder or ``shown`` (the text of them it
        gives the model) holds words a tainted run wrote (``titles``: ``shown`` is the notes' titles)."""
        source = self._source(paths)
        if source is None and self._provenance is not None and shown.strip():
            found = await self._provenance.sources_in(shown, titles=titles)
            source = note_source(found) if found else None
        return result if source is None else ContentResult(result, untrusted=source)


class VaultWrite(_VaultTool):
    """Create, append to or replace a note."""

    name = "vault_write"
    description = (
        "Save a Markdown note in the user's vault. mode=create (default) never overwrites: if the title "
        "is taken by different content the note gets a unique name, and the result says so. "
        "mode=append adds to the end of a note; mode=replace swaps its body and keeps the old version. "
        "A created note's result lists `related`: up to 3 existing notes closest in meaning. "
        "Call it together with log_interaction in one response when nothing else must happen first."
    )
    input_model = VaultWriteInput

    async def run(self, input: VaultWriteInput, context: ToolContext) -> dict[str, Any] | ContentResult:
        """Write the note and say where it went. A run holding someone else's words writes no remote
        embed (``bot.consent.embeds``), and what it writes keeps its sources (``bot.consent.provenance``)."""
        embeds: tuple[str, ...] = ()
        if context.sources:
            plain = unlinked(input.content, context.addresses)
            input, embeds = input.model_copy(update={"content": plain.text}), plain.addresses
        written, related = await _in_thread(self._write, input, context)
        result: dict[str, Any] = {"success": True, **vars(written)}  # flat (vault.notes): no deep copy needed
        change = result.pop("change")  # for the run's record, not for the model
        if change is not None:
            context.changes.add(with_sources(change, context.sources))
            await self._keep(input, written, change, context)
        if embeds:
            result["embeds_unlinked"] = (
                f"{len(embeds)} remote embed(s) written as plain links, so opening the note fetches nothing: "
                + ", ".join(embeds)
            )
        if not written.created:
            return result
        result["related"] = [dataclasses.asdict(note) for note in related]
        return await self._result(result, [n.path for n in related], "\n".join(n.title for n in related), titles=True)

    async def _keep(
        self, input: VaultWriteInput, written: vault.WriteResult, change: vault.Change, context: ToolContext
    ) -> None:
        """Keep what a tainted run wrote with its sources: the text, and a created note's title."""
        if self._provenance is None or not context.sources:
            return
        keep = functools.partial(self._provenance.keep, run_id=context.run_id, path=written.path, own=context.own)
        await keep(kind=change.kind, text=unstamp(input.content), sources=context.sources)
        if written.created:
            await keep(kind="title", text=Path(written.path).stem, sources=context.sources)

    def _write(self, input: VaultWriteInput, context: ToolContext) -> tuple[vault.WriteResult, list[vault.Related]]:
        # The write and the related notes of a created note in one trip to a worker thread, not two.
        # A note holds the user's words: a message copied in whole loses the time stamp vaultbot put on it.
        written = self._vault.write(
            input.folder,
            unstamp(input.title),
            unstamp(input.content),
            tags=input.tags,
            confidence=input.confidence,
            mode=input.mode,
            source=context.channel,
            read=context.read,
        )
        related: list[vault.Related] = []
        if written.created:
            try:
                related = self._vault.related(written.path)
            except Exception:  # the note is saved: its neighbours are a nicety that must not unsay that
                log.warning("vault_write: the notes related to %s could not be found", written.path, exc_info=True)
        return written, related


class VaultRead(_VaultTool):
    """Read one note."""

    name = "vault_read"
    description = (
        'Read a note from the vault by its path (".md" optional) or its title. '
        "The path of an image (.jpg, .jpeg, .png, .webp, .gif) shows you the image."
    )
    input_model = VaultReadInput

    async def run(self, input: VaultReadInput, context: ToolContext) -> dict[str, Any] | ContentResult:
        """Return the note's body and front matter, or show the image at the path."""
        if is_image_path(input.path):
            return await self._image(input.path)
        note = await _in_thread(self._vault.read, input.path)
        context.read.add(note.path)
        result = {
            "success": True,
            "path": note.path,
            "title": note.title,
            "content": note.content,
            "frontmatter": _jsonable(note.frontmatter),
        }
        return await self._result(result, [note.path], note.content)

    async def _image(self, path: str) -> ContentResult:
        location = await _in_thread(self._vault.resolve, path)
        image = await _in_thread(_load_image, location, path)
        if not isinstance(image, Prepared):
            raise ToolError(f"{show(path)} could not be shown: {image.reason}.", error_type="unreadable_image")
        relative = location.relative_to(self._vault.root.resolve()).as_posix()
        result = {
            "success": True,
            "path": relative,
            "content": f"(An image, {image.width}×{image.height} px as you see it: shown with this result.)",
            "frontmatter": {},
        }
        # Pixels from anywhere may carry someone else's words (a screenshot): the result is labelled so.
        return ContentResult(result, [image_block(image)], untrusted=IMAGE_SOURCE)


def _load_image(location: Path, path: str) -> Prepared | Unshowable:
    if not location.is_file():
        raise vault.NoteNotFound(f"There is no image at {show(path)} in the vault.")
    return prepare(location.read_bytes())


class VaultList(_VaultTool):
    """List a folder."""

    name = "vault_list"
    description = 'List the notes (newest first) and subfolders of a vault folder; "" is the root.'
    input_model = VaultListInput

    async def run(self, input: VaultListInput, context: ToolContext) -> dict[str, Any] | ContentResult:
        """Return the folder's notes and subfolders."""
        listing = await _in_thread(self._vault.list, input.folder, input.limit)
        result = {
            "success": True,
            "notes": [dataclasses.asdict(n) for n in listing.notes],
            "folders": listing.folders,
        }
        titles = "\n".join(n.title for n in listing.notes)
        return await self._result(result, [n.path for n in listing.notes], titles, titles=True)


class VaultSearch(_VaultTool):
    """Search the vault."""

    name = "vault_search"
    description = (
        "Search the notes by meaning and by words (titles, bodies, tags); returns the best matches with a "
        "snippet. Ask in plain words what you are looking for. "
        "Optionally only notes with given tags or under a folder."
    )
    input_model = VaultSearchInput

    async def run(self, input: VaultSearchInput, context: ToolContext) -> dict[str, Any] | ContentResult:
        """Return ranked matches."""
        hits = await _in_thread(self._vault.search, input.query, input.limit, tags=input.tags, folder=input.folder)
        result = {"success": True, "results": [dataclasses.asdict(h) for h in hits]}
        shown = "\n\n".join(f"{h.title}\n{h.snippet}" for h in hits)
        return await self._result(result, [h.path for h in hits], shown)


def _jsonable(value: Any) -> Any:
    # Front matter written by people may hold dates and other YAML types JSON cannot carry.
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
