"""Taking a recorded :class:`~vault.changes.Change` back, without clobbering later work or leaving the vault.

A change is taken back only while its file is exactly as the change left it (its digest): a note
edited since (in Obsidian, by a sync, by a later write) is left as it is, and the outcome says what
changed. A created file goes to ``.trash/`` under its own path (Obsidian's trash, where a person
finds it), an earlier text is put back with the current one kept under ``.vaultbot/versions/``,
and each of these records a change of its own, so an undo can itself be taken back.

The tools keep out of hidden folders; this is the one path into ``.trash/`` and the versions, and it
follows no symlink there: each folder on the way must be a real folder, a file is opened with
``O_NOFOLLOW``, and a file moves by a hard link that never replaces one that is there.

Taking back twice is harmless: a file already where the change would put it (an undo cut short by a
crash, and run again) counts as taken back, with the change that did it found from what is on disk.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import TYPE_CHECKING, Any

from vault.changes import Change, digest, line_diff, rebuild, text_detail
from vault.errors import InvalidNote, NoteExists, PathNotAllowed
from vault.files import exclusive_lock, make_folders, note_mode, sync_folder, write_atomic
from vault.paths import NOTE_SUFFIX, confine, show, split_components

if TYPE_CHECKING:
    from vault.catalog import Catalog
    from vault.folder_names import FolderNames

__all__ = ["TRASH", "Outcome", "Reversible"]

TRASH = ".trash"
VERSIONS = (".vaultbot", "versions")
_REVERSIBLE = ("appended", "replaced", "reverted")
_TO_TRASH = ("created", "restored", "attachment")


@dataclass(frozen=True)
class Outcome:
    """What taking one change back did: ``undone`` (with ``change``, what it changed now; None on a
    dry run), ``already`` (it was as before: nothing to do) or ``left`` (``reason`` says why;
    ``current`` is the digest of the file there now, when there is one)."""

    status: str
    change: Change | None = None
    reason: str | None = None
    current: str | None = None


class Reversible:
    """The vault's undo: :meth:`take_back`. Mixed into :class:`~vault.vault.Vault`, whose locks,
    folder names and index it keeps up to date as its writes do."""

    root: Path
    _names: FolderNames
    _seen: dict[Path, tuple[int, int]]
    _catalog: Catalog

    if TYPE_CHECKING:

        def _rel(self, path: Path) -> str: ...
        def _lock_file(self, directory: Path) -> Path: ...
        def _version_path(self, path: Path) -> Path: ...

    def take_back(self, change: Change, *, dry_run: bool = False) -> Outcome:
        """Take ``change`` back if its file is as the change left it (with ``dry_run``, only say
        whether it would be). Refuses, as ``left``, a path that now leads outside the vault."""
        if change.kind not in (*_TO_TRASH, "trashed", *_REVERSIBLE):
            raise InvalidNote(f"Unknown kind of change {show(change.kind)}.")
        try:
            location = self._note_location(change.path)
            with exclusive_lock(self._lock_file(location.parent)):
                if change.kind in _TO_TRASH:
                    return self._to_trash(change, location, dry_run)
                if change.kind == "trashed":
                    return self._from_trash(change, location, dry_run)
                return self._revert(change, location, dry_run)
        except PathNotAllowed as exc:
            return Outcome("left", reason=f"it cannot be reached safely now ({exc})")
        except NoteExists as exc:
            return Outcome("left", reason=str(exc))

    # --- created files go to the trash ----------------------------------------------------

    def _to_trash(self, change: Change, location: Path, dry_run: bool) -> Outcome:
        data, problem = _read_plain(location)
        if data is None and problem == _MISSING:
            earlier = self._trashed_copy(change.path, change.after) if change.after else None
            if earlier is not None:  # moved there by an undo that was cut short
                return Outcome("undone", self._trashed(change.path, earlier))
            return Outcome("already", reason="it was deleted or moved since")
        if data is None:
            return Outcome("left", reason=problem)
        now = digest(data)
        if change.after is not None and now != change.after:
            return Outcome("left", reason=_since(change, data), current=now)
        if dry_run:
            return Outcome("undone")
        target = self._trash_place(change.path, now)
        _move(location, target, now)
        self._names.forget(location.parent)
        self._seen.pop(location, None)
        return Outcome("undone", self._trashed(change.path, target, data))

    def _trashed(self, rel: str, target: Path, data: bytes | None = None) -> Change:
        data = _read_plain(target)[0] if data is None else data
        assert data is not None
        return Change("trashed", rel, digest(data), None, kept=self._rel_private(target), detail=_shown(rel, data))

    def _trash_place(self, rel: str, wanted: str) -> Path:
        """Where in ``.trash/`` the file at ``rel`` goes: under its own path, " 2", " 3"… when taken;
        a copy with the same bytes already there (a move cut short) is that place."""
        parts = split_components(rel)
        folder = self._private_folder([TRASH, *parts[:-1]], create=True)
        stem, suffix = _split_name(parts[-1])
        for copy in range(1, 1000):
            candidate = folder / (parts[-1] if copy == 1 else f"{stem} {copy}{suffix}")
            data, problem = _read_plain(candidate)
            if problem == _MISSING or (data is not None and digest(data) == wanted):
                return candidate
        raise NoteExists(f"Too many files named {show(parts[-1])} are already in {TRASH}.")

    def _trashed_copy(self, rel: str, wanted: str) -> Path | None:
        """A file in ``.trash/`` with the bytes ``wanted`` under the name ``rel`` would have been given there."""
        parts = split_components(rel)
        try:
            folder = self._private_folder([TRASH, *parts[:-1]], create=False)
        except (PathNotAllowed, FileNotFoundError):
            return None
        stem, suffix = _split_name(parts[-1])
        copies = re.compile(re.escape(stem) + r"( \d+)?" + re.escape(suffix))
        for name in sorted(os.listdir(folder)):
            if copies.fullmatch(name):
                data = _read_plain(folder / name)[0]
                if data is not None and digest(data) == wanted:
                    return folder / name
        return None

    # --- trashed files come back ----------------------------------------------------------

    def _from_trash(self, change: Change, location: Path, dry_run: bool) -> Outcome:
        if change.kept is None or change.before is None:
            return Outcome("left", reason="the change does not say where in the trash it went")
        try:
            source = self._private_file(change.kept, TRASH)
        except PathNotAllowed as exc:
            return Outcome("left", reason=f"its copy in {TRASH} cannot be reached safely ({exc})")
        here, problem = _read_plain(location)
        kept, kept_problem = _read_plain(source)
        if here is not None:
            now = digest(here)
            if now != change.before:
                return Outcome("left", reason="another file is at that path now", current=now)
            if kept is not None and digest(kept) == now and not dry_run:
                os.unlink(source)  # put back by an undo cut short before it removed the copy
            return Outcome("undone", None if dry_run else self._restored(change, here))
        if problem != _MISSING:
            return Outcome("left", reason=problem)
        if kept is None:
            return Outcome("left", reason=f"it is no longer in {TRASH}" if kept_problem == _MISSING else kept_problem)
        if digest(kept) != change.before:
            return Outcome("left", reason=f"its copy in {TRASH} changed since")
        if dry_run:
            return Outcome("undone")
        make_folders(location.parent)
        _move(source, location, change.before)
        self._names.forget(location.parent)
        return Outcome("undone", self._restored(change, kept))

    @staticmethod
    def _restored(change: Change, data: bytes) -> Change:
        return Change("restored", change.path, None, change.before, kept=change.kept, detail=_shown(change.path, data))

    # --- an earlier text is put back ------------------------------------------------------

    def _revert(self, change: Change, location: Path, dry_run: bool) -> Outcome:
        data, problem = _read_plain(location)
        if data is None:
            reason = "it was deleted or moved since" if problem == _MISSING else problem
            if change.kept is not None and problem == _MISSING:
                reason += f"; its earlier text is kept in {change.kept}"
            return Outcome("left", reason=reason)
        now = digest(data)
        if now == change.before:
            version = self._version_with(location, change.after) if change.after else None
            if version is None:
                return Outcome("already", reason="it was already as it was before")
            return Outcome("undone", self._reverted(change.path, _read_plain(version)[0] or b"", data, version))
        if now != change.after:
            return Outcome("left", reason=_since(change, data), current=now)
        earlier = self._earlier(change, data)
        if earlier is None or digest(earlier) != change.before:
            return Outcome("left", reason="its earlier text cannot be found as it was")
        if dry_run:
            return Outcome("undone")
        version = self._version_path(location)
        write_atomic(version, data)
        write_atomic(location, earlier, mode=note_mode(self.root, location))
        stat = location.stat()
        self._seen[location] = (stat.st_mtime_ns, stat.st_size)
        self._catalog.record(change.path, earlier, stat)
        return Outcome("undone", self._reverted(change.path, data, earlier, version))

    def _reverted(self, rel: str, data: bytes, earlier: bytes, version: Path) -> Change:
        text, before = data.decode("utf-8", errors="replace"), earlier.decode("utf-8", errors="replace")
        detail = {"diff": line_diff(text, before), **text_detail(before)}
        return Change("reverted", rel, digest(data), digest(earlier), kept=self._rel_private(version), detail=detail)

    def _earlier(self, change: Change, data: bytes) -> bytes | None:
        """The bytes the note had before ``change``: its kept version, or rebuilt from the note now."""
        if change.kept is not None:
            try:
                return _read_plain(self._private_file(change.kept, *VERSIONS))[0]
            except PathNotAllowed:
                return None
        try:
            text = rebuild(data.decode("utf-8"), change.detail)
        except (UnicodeDecodeError, KeyError):
            return None
        return None if text is None else text.encode("utf-8")

    def _version_with(self, location: Path, wanted: str) -> Path | None:
        """The newest kept version of the note at ``location`` with the bytes ``wanted``."""
        rel = self._rel(location)
        parts = [*VERSIONS, *split_components(rel[: -len(NOTE_SUFFIX)] if rel.endswith(NOTE_SUFFIX) else rel)]
        try:
            folder = self._private_folder(parts, create=False)
        except (PathNotAllowed, FileNotFoundError):
            return None
        for name in sorted(os.listdir(folder), reverse=True):
            data = _read_plain(folder / name)[0]
            if data is not None and digest(data) == wanted:
                return folder / name
        return None

    # --- where things are -----------------------------------------------------------------

    def _note_location(self, rel: str) -> Path:
        """Where the file at vault-relative ``rel`` is: its folder with symlinks followed (inside the
        vault only), the file itself not followed, so a link there is seen as one."""
        parts = split_components(rel)
        if not parts:
            raise PathNotAllowed(f"{show(rel)} names no file.")
        folder = confine(self.root, "/".join(parts[:-1])) if len(parts) > 1 else self.root
        return folder / parts[-1]

    def _private_folder(self, parts: list[str], *, create: bool) -> Path:
        """The folder ``parts`` under the root (the first may be hidden), each one a real folder,
        none a symlink; made when missing with ``create``, else ``FileNotFoundError``."""
        current = self.root
        for index, part in enumerate(parts):
            if index > 0:
                split_components(part)  # the note's own folders: no "..", no hidden ones
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(current)
                sync_folder(current.parent)
                mode = os.lstat(current).st_mode
            if S_ISLNK(mode) or not S_ISDIR(mode):
                raise PathNotAllowed(f"{show('/'.join(parts[: index + 1]))} is a link or not a folder.")
        return current

    def _private_file(self, rel: str, *area: str) -> Path:
        """The file at ``rel``, which must lie in ``area`` (``.trash``, or the versions) through real folders."""
        parts = rel.split("/")
        if len(parts) <= len(area) or tuple(parts[: len(area)]) != area or "\x00" in rel:
            raise PathNotAllowed(f"{show(rel)} is not in {'/'.join(area)}.")
        split_components("/".join(parts[len(area) :]))
        return self._private_folder(parts[:-1], create=False) / parts[-1]

    def _rel_private(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


_MISSING = "it was deleted or moved since"


def _read_plain(location: Path) -> tuple[bytes | None, str | None]:
    """The bytes of the regular file at ``location``, not following a symlink; else None and why."""
    try:
        fd = os.open(location, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None, _MISSING
    except NotADirectoryError:
        return None, "its folder is a file now"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "it is a link now"
        return None, f"it cannot be read ({exc.strerror})"
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            return None, "it is not a file now"
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read(), None
    finally:
        os.close(fd)


def _move(source: Path, target: Path, wanted: str) -> None:
    """Move ``source`` to ``target`` without replacing anything there but a copy with the bytes ``wanted``."""
    try:
        os.link(source, target)
    except FileExistsError:
        there = _read_plain(target)[0]
        if there is None or digest(there) != wanted:
            raise NoteExists(f"{show(target.name)} appeared meanwhile; nothing was moved.") from None
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        data = _read_plain(source)[0]
        if data is None:
            raise
        write_atomic(target, data, exclusive=True)  # another file system: a copy, then the original goes
    os.unlink(source)
    sync_folder(target.parent)
    sync_folder(source.parent)


def _split_name(name: str) -> tuple[str, str]:
    stem, dot, suffix = name.rpartition(".")
    return (stem, f".{suffix}") if dot and stem else (name, "")


def _shown(rel: str, data: bytes) -> dict[str, Any]:
    """What a change keeps to show a file: a note's text, or an attachment's size."""
    if rel.lower().endswith(NOTE_SUFFIX):
        return text_detail(data.decode("utf-8", errors="replace"))
    return {"bytes": len(data)}


def _since(change: Change, data: bytes) -> str:
    """What changed in a file since ``change`` left it, in words."""
    if not change.path.lower().endswith(NOTE_SUFFIX):
        return "it changed since"
    text = data.decode("utf-8", errors="replace")
    tail = str(change.detail.get("after_tail", "")).strip()
    if change.kind == "appended" and tail:
        where = "above the added text" if text.rstrip().endswith(tail) else "the added text too"
        return f"it was edited since ({where})"
    known = change.detail.get("text")
    if not isinstance(known, str):
        return "it was edited since"
    lines = line_diff(known, text, context=0)
    added = [line[1:] for line in lines if line.startswith("+")]
    removed = [line for line in lines if line.startswith("-")]
    counts = f"{_count(len(added), 'line')} added, {len(removed)} removed"
    sample = next((line.strip() for line in added if line.strip()), "")
    if sample:
        counts += f": “{sample if len(sample) <= 60 else sample[:59] + '…'}”"
    return f"it was edited since ({counts})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
