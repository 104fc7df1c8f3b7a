"""The vault: a folder of Obsidian-compatible Markdown notes."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import difflib
import hashlib
import os
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR, S_ISLNK
from typing import Any

from vault import frontmatter, hybrid, meta
from vault.catalog import Catalog
from vault.changes import Change, digest, line_diff, splice, text_detail
from vault.document_backlog import read_entry
from vault.document_reader import DocumentReader, ReadingLimits
from vault.documents import INDEX_CHARS, DocumentText, is_document
from vault.embedder import Embedder
from vault.errors import InvalidNote, NoteChanged, NoteExists, NoteNotFound, NotRead, VaultError
from vault.files import exclusive_lock, keep_private, make_folders, note_mode, staged, sync_folder, write_atomic
from vault.folder_names import FolderNames, names_by_casefold
from vault.index import Entry, match_expression
from vault.languages import language_of
from vault.notes import Listing, Note, NoteSummary, Related, SearchHit, SyncReport, WriteResult
from vault.paths import (
    NOTE_SUFFIX,
    confine,
    folder_name,
    follow_links,
    is_inside,
    note_stem,
    resolve_inside,
    show,
    split_components,
)
from vault.recall import Recall
from vault.swap import swap_in
from vault.takeback import Reversible

MODES = ("create", "append", "replace")
# The folder where the channels keep what came with messages (photos, documents, recordings).
ATTACHMENTS = "Attachments"
PRIVATE_DIR = ".vaultbot"
# A create gives up on a title after "Title 999"; the file-name budget leaves room for exactly that.
_MAX_COPIES = 999
# Times an append is built again on a note a sync tool keeps replacing before it gives up.
_SWAP_ATTEMPTS = 20
# Added to the similarity of a related note in the note's own language (cosine; docs/search.md has the measure).
SAME_LANGUAGE_BONUS = 0.1


class Vault(Reversible):
    """Reads and writes notes under ``root``, never outside it; takes recorded changes back (:mod:`vault.takeback`)."""

    def __init__(
        self,
        root: str | Path,
        *,
        max_staleness: float = 1.0,
        embedder: Embedder | None = None,
        english: Embedder | None = None,
        reading: ReadingLimits | None = None,
    ) -> None:
        """Open the vault at ``root`` (created if missing) and bring its search index up to date.

        ``max_staleness`` is how old (in seconds) the index may be when a search or listing
        answers: edits made outside vaultbot (in Obsidian, by a sync) are picked up by a check of
        the disk at most that often; vaultbot's own writes are found at once.

        With an ``embedder``, search finds notes by meaning as well as by words, once a background
        thread has embedded them (``vault.recall``); without one, by words alone. With an ``english``
        embedder too, notes in English are embedded by it and the rest by ``embedder``.

        Documents (PDF, text, CSV, JSON) are read in a process of their own within ``reading``'s limits
        of time and memory (:mod:`vault.document_reader`); those found on disk, in the background.
        """
        path = Path(root).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        self.root = path.resolve()
        self._root_prefix = os.path.join(self.root, "")
        # (mtime_ns, size) of each file as this instance last read or wrote it, to spot outside edits.
        self._seen: dict[Path, tuple[int, int]] = {}
        self._names = FolderNames()
        # Each folder's lock file, named once: a hash of the folder's path is the same every time.
        self._lock_files: dict[Path, Path] = {}
        # New notes are staged here, not in their folder: a temporary file there would change the
        # folder's mtime and so make every write list the folder again (``vault.folder_names``).
        self._staging = self.root / PRIVATE_DIR / "staging"
        keep_private(self.root / PRIVATE_DIR)
        self._staging.mkdir(exist_ok=True)
        self._staging_device = self._staging.stat().st_dev
        self._reader = DocumentReader(reading)
        self._catalog = Catalog(
            self.root, self.root / PRIVATE_DIR / "index.db", max_staleness=max_staleness, reader=self._reader
        )
        self._catalog.sync()
        self._recall: Recall | None = None
        if embedder is not None:
            self._recall = Recall(self.root, self.root / PRIVATE_DIR / "vectors.db", embedder, english)
            self._catalog.listener = self._recall
            self._recall.start(self._catalog.index.known())

    def close(self) -> None:
        """Stop reading documents and embedding, and close the search indexes."""
        self._catalog.documents.stop()
        self._reader.close()  # a reading under way ends now, and the thread waiting on it with it
        if self._recall is not None:
            self._recall.close()
        self._catalog.close()

    def wait_for_meaning(self, timeout: float, *, all_notes: bool = True) -> bool:
        """Wait until search answers by meaning and (``all_notes``) every note is embedded; False on timeout or
        without a model."""
        return self._recall is not None and self._recall.wait(timeout, all_notes=all_notes)

    def wait_for_documents(self, timeout: float) -> bool:
        """Wait until the documents found on disk so far are read and in line for the search index; False on timeout."""
        return self._catalog.documents.wait(timeout)

    def sync(self) -> SyncReport:
        """Check the disk now and bring the search index in line with it."""
        return self._catalog.sync()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- paths -------------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The absolute location of vault-relative ``path``; raises ``PathNotAllowed`` if it leaves the vault."""
        return confine(self.root, path)

    def _rel(self, path: Path) -> str:
        # String slicing, not Path.relative_to (5 µs, three times per write); the root itself and any
        # path outside it still go through relative_to ("." or a ValueError).
        text = os.fspath(path)
        if text.startswith(self._root_prefix) and len(text) > len(self._root_prefix):
            return text[len(self._root_prefix) :].replace(os.sep, "/")
        return path.relative_to(self.root).as_posix()

    # --- write -------------------------------------------------------------------------

    def write(
        self,
        folder: str,
        title: str,
        content: str,
        *,
        tags: list[str] | None = None,
        confidence: int | None = None,
        mode: str = "create",
        source: str | None = None,
        front_matter: dict[str, Any] | None = None,
        read: AbstractSet[str] | None = None,
    ) -> WriteResult:
        """Create, append to or replace the note called ``title`` in ``folder``.

        ``front_matter`` adds fields to a new note's front matter (a clipping's author, published, description).
        With ``read`` (the vault paths the writer has read), ``replace`` refuses an existing note not among
        them: nothing replaces text it has not seen.

        ``create`` never overwrites: an identical note is reported unchanged, a different one
        makes this note "Title 2", "Title 3"…; ``append`` adds to the end (creating if needed);
        ``replace`` swaps the body and keeps the old file under ``.vaultbot/versions``.
        """
        if mode not in MODES:
            raise InvalidNote(f"Unknown write mode {show(mode)}; use one of {', '.join(MODES)}.")
        if not title.strip():
            raise InvalidNote("A note needs a non-empty title.")
        if "\x00" in content:
            raise InvalidNote("Note content cannot contain NUL bytes.")
        directory = self._write_folder(folder)
        extra = front_matter or {}
        fields = {"tags": meta.clean_tags(tags), "confidence": confidence, "source": source, "extra": extra}
        stem, title = note_stem(title), title.strip()
        if mode == "create":
            # The note's bytes reach the disk before the folder lock is taken: other writers into
            # this folder wait only for the name to be chosen, not for an fsync.
            with self._staged_note(directory, stem, title, content, fields) as new:
                with exclusive_lock(self._lock_file(directory)):
                    result = self._create(directory, self._names.taken(directory), stem, content, new)
        else:
            with exclusive_lock(self._lock_file(directory)):
                result = self._change(directory, stem, title, content, fields, mode, read)
        # Outside the lock, so concurrent writers' folder syncs are shared; done before returning,
        # so a caller that reports the note saved can rely on it. The note is in line for the index
        # (queued under the lock, so a later write of it lands last): the next search finds it.
        sync_folder(directory)
        self._catalog.settle()
        return result

    def _change(
        self,
        directory: Path,
        stem: str,
        title: str,
        content: str,
        fields: dict[str, Any],
        mode: str,
        read: AbstractSet[str] | None,
    ) -> WriteResult:
        taken = self._names.taken(directory)
        existing_name = taken.get(f"{stem}{NOTE_SUFFIX}".casefold())
        existing = None if existing_name is None else directory / existing_name
        if existing is not None:
            self._refuse_link_out(existing)
        if existing is None and mode == "append":
            with self._staged_note(directory, stem, title, content, fields) as new:
                return self._create(directory, taken, stem, content, new)
        if existing is None:
            where = "/" if directory == self.root else self._rel(directory)
            raise NoteNotFound(f"No note titled {show(title)} in {show(where)} to replace.")
        if mode == "append":
            return self._append(existing, content, fields)
        if read is not None and self._rel(existing) not in read:
            raise NotRead(f"{show(self._rel(existing))} has not been read in this run; read it before replacing it.")
        return self._replace(existing, content, fields)

    def _write_folder(self, folder: str) -> Path:
        """The folder a write into ``folder`` goes to, resolved; nothing is created yet.

        Folders that exist are used as they are named on disk (also when only the case differs, so
        "inbox" does not become a second "Inbox" that macOS and Windows could not hold); missing
        ones get names every OS accepts (:func:`~vault.paths.folder_name`).
        """
        current = self.root
        parts = split_components(folder)
        linked = False
        for index, part in enumerate(parts):
            found = _existing_entry(current, part)
            if found is None:
                current = current.joinpath(*(folder_name(p) for p in parts[index:]))
                break
            current, mode = found
            if S_ISLNK(mode):
                linked = True
                if current.exists() and not current.is_dir():
                    raise InvalidNote(f"{show(folder)} goes through the file {show(current.name)}, not a folder.")
            elif not S_ISDIR(mode):
                raise InvalidNote(f"{show(folder)} goes through the file {show(current.name)}, not a folder.")
        if not linked:
            # The root is resolved, no part is "." or "..", and each part that exists is a real folder:
            # there is nothing to follow, so the path is already what resolving it would give.
            return current
        return resolve_inside(self.root, current, show(folder))

    @contextlib.contextmanager
    def _staged_note(
        self, directory: Path, stem: str, title: str, content: str, fields: dict[str, Any]
    ) -> Iterator[_NewNote]:
        """A new note's file, on disk under a temporary name, and its index entry: all the slow
        work of a create, done before the folder lock is taken."""
        stamp = meta.iso(meta.now())
        front: dict[str, Any] = {"title": title, "tags": fields["tags"]}
        if fields["confidence"] is not None:
            front["confidence"] = fields["confidence"]
        front.update(created=stamp, updated=stamp)
        if fields["source"] is not None:
            front["source"] = fields["source"]
        front.update({key: value for key, value in fields["extra"].items() if key not in front})
        text, front, body = frontmatter.render_parsed(front, content)
        data = text.encode("utf-8")
        try:
            device = os.stat(directory).st_dev
        except FileNotFoundError:
            make_folders(directory)
            device = os.stat(directory).st_dev
        # A hard link cannot cross file systems (a folder that is a mount point): staged beside it then.
        beside = device != self._staging_device
        mode = note_mode(self.root, directory / f"{stem}{NOTE_SUFFIX}")
        with staged(directory if beside else self._staging, data, mode) as file:
            # A hard link shares the staged file's inode: same size and mtime under its final name.
            stat = file.stat()
            entry = self._catalog.entry(self._rel(directory / f"{stem}{NOTE_SUFFIX}"), data, stat, (front, body))
            yield _NewNote(file, stat, entry, text)

    def _create(self, directory: Path, taken: dict[str, str], stem: str, content: str, new: _NewNote) -> WriteResult:
        """Link the ``new`` note in under the first free name, and put it in line for the index;
        the folder lock is held."""
        for copy in range(1, _MAX_COPIES + 1):
            name = f"{stem}{NOTE_SUFFIX}" if copy == 1 else f"{stem} {copy}{NOTE_SUFFIX}"
            clash_name = taken.get(name.casefold())
            if clash_name is None:
                path = directory / name
                try:
                    os.link(new.file, path)
                except FileExistsError:
                    self._names.forget(directory)
                    continue  # created behind the lock's back (Obsidian, a sync): never clobber it
                self._names.added(directory, name)
                # Queued under the lock: a later write of the same note cannot be overtaken by this one.
                self._seen[path] = (new.stat.st_mtime_ns, new.stat.st_size)
                rel = self._rel(path)
                self._catalog.add(dataclasses.replace(new.entry, path=rel))
                change = Change("created", rel, None, new.entry.sha256, detail=text_detail(new.text))
                return self._result(path, created=True, renamed=copy > 1, change=change)
            clash = directory / clash_name
            self._refuse_link_out(clash)
            if clash.is_file() and self._load(clash)[1].strip() == content.strip():
                # The same note saved again (a retried message): nothing to do.
                return self._result(clash, unchanged=True)
        raise NoteExists(f"Too many notes are already titled {show(stem)}; choose a more specific title.")

    def _append(self, path: Path, content: str, fields: dict[str, Any]) -> WriteResult:
        old_bytes = path.read_bytes()
        for _ in range(_SWAP_ATTEMPTS):
            text = self._appending(old_bytes, content, fields)
            if text is None:
                return self._result(path, unchanged=True)
            # Built on these bytes: if a sync tool replaced the note since, it is built again on theirs.
            after = self._store(path, text, based_on=old_bytes)
            if isinstance(after, str):
                return self._result(path, change=self._appended(path, old_bytes, text, _body(old_bytes), after))
            old_bytes = after
        raise NoteChanged(f"{show(self._rel(path))} keeps changing on disk (a sync?); try again in a moment.")

    def _appending(self, old_bytes: bytes, content: str, fields: dict[str, Any]) -> str | None:
        """The note ``old_bytes`` with ``content`` added at its end, or None when there is nothing to add."""
        front, body = frontmatter.parse(old_bytes.decode("utf-8", errors="replace"))
        addition = content.strip("\n")
        old_tags = meta.clean_tags(front.get("tags"))
        tags = old_tags + [tag for tag in fields["tags"] if tag not in old_tags]
        already_there = bool(addition.strip()) and body.rstrip().endswith(addition.strip())
        if (already_there or not addition.strip()) and tags == old_tags:
            return None
        if not already_there:
            body = f"{body.rstrip()}\n\n{addition}" if body.strip() else addition
        front["tags"] = tags
        self._update_fields(front, fields, tags=False)
        return frontmatter.render(front, body)

    def _appended(self, path: Path, old_bytes: bytes, text: str, shared: str, after: str) -> Change:
        """The record of an append: what differs at the head and the tail of the note; a note that
        was not UTF-8 cannot be rebuilt from text, so its bytes are kept as a version instead."""
        rel, before = self._rel(path), digest(old_bytes)
        try:
            old_text = old_bytes.decode("utf-8")
        except UnicodeDecodeError:
            version = self._version_path(path)
            write_atomic(version, old_bytes)
            return Change("appended", rel, before, after, kept=self._rel(version))
        return Change("appended", rel, before, after, detail=splice(old_text, text, shared))

    def _replace(self, path: Path, content: str, fields: dict[str, Any]) -> WriteResult:
        remembered = self._seen.get(path.resolve())
        if remembered is not None and remembered != _signature(path):
            raise NoteChanged(
                f"{show(self._rel(path))} changed on disk since it was last read; read it again before replacing it."
            )
        old_bytes = path.read_bytes()
        old_text = old_bytes.decode("utf-8", errors="replace")
        front, body = frontmatter.parse(old_text)
        if body.strip() == content.strip():
            return self._result(path, unchanged=True)
        version = self._version_path(path)
        write_atomic(version, old_bytes)
        self._update_fields(front, fields, tags=True)
        text = frontmatter.render(front, content)
        after = self._store(path, text, based_on=old_bytes)
        if not isinstance(after, str):
            version.unlink(missing_ok=True)
            raise NoteChanged(
                f"{show(self._rel(path))} changed on disk while it was replaced; read it again before replacing it."
            )
        detail = {"diff": line_diff(old_text, text), **text_detail(text)}
        change = Change("replaced", self._rel(path), digest(old_bytes), after, self._rel(version), detail)
        return self._result(path, previous_version=version, change=change)

    def _result(
        self,
        path: Path,
        *,
        created: bool = False,
        unchanged: bool = False,
        renamed: bool = False,
        previous_version: Path | None = None,
        change: Change | None = None,
    ) -> WriteResult:
        previous = self._rel(previous_version) if previous_version is not None else None
        return WriteResult(self._rel(path), created, unchanged, renamed, previous, change)

    @staticmethod
    def _update_fields(front: dict[str, Any], fields: dict[str, Any], *, tags: bool) -> None:
        if tags and fields["tags"]:
            front["tags"] = fields["tags"]
        if fields["confidence"] is not None:
            front["confidence"] = fields["confidence"]
        front["updated"] = meta.iso(meta.now())
        if fields["source"] is not None:
            front["source"] = fields["source"]

    def _version_path(self, path: Path) -> Path:
        folder = self.root / PRIVATE_DIR / "versions" / self._rel(path)[: -len(NOTE_SUFFIX)]
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        candidate, extra = folder / f"{stamp}{NOTE_SUFFIX}", 1
        while candidate.exists():
            extra += 1
            candidate = folder / f"{stamp}-{extra}{NOTE_SUFFIX}"
        return candidate

    def _lock_file(self, directory: Path) -> Path:
        # One lock per folder: create's name choice and append/replace all happen inside one folder.
        lock = self._lock_files.get(directory)
        if lock is None:
            key = hashlib.sha256(self._rel(directory).casefold().encode()).hexdigest()[:32]
            lock = self._lock_files[directory] = self.root / PRIVATE_DIR / "locks" / f"{key}.lock"
        return lock

    def _refuse_link_out(self, path: Path) -> None:
        # A note file may itself be a symlink; reading or replacing it must not reach outside.
        resolve_inside(self.root, path, show(self._rel(path)))

    def _store(self, path: Path, text: str, *, based_on: bytes) -> str | bytes:
        """Write ``text`` as the note at ``path`` if it still holds ``based_on``, and put it in line for
        the index; returns its digest, or the bytes another program put there meanwhile (kept)."""
        data = text.encode("utf-8")
        try:
            # The folder is synced once the lock is released.
            now = swap_in(path, data, based_on, mode=note_mode(self.root, path))
        except FileNotFoundError:
            raise NoteChanged(f"{show(self._rel(path))} was deleted on disk while it was written.") from None
        if now is not None:
            return now
        stat = path.stat()
        self._seen[path.resolve()] = (stat.st_mtime_ns, stat.st_size)
        return self._catalog.record(self._rel(path), data, stat)

    def _load(self, path: Path) -> tuple[dict[str, Any], str]:
        text = path.read_bytes().decode("utf-8", errors="replace")
        return frontmatter.parse(text)

    # --- daily note --------------------------------------------------------------------

    def daily_note(
        self, text: str, *, folder: str = "Daily", pattern: str = "%Y-%m-%d", when: dt.datetime | None = None
    ) -> WriteResult:
        """Add ``text`` as a timestamped line to the day's note (named by ``pattern``, a strftime
        format), creating the note on its first line of the day; never creates an empty note."""
        title, line = daily_entry(text, pattern=pattern, when=when)
        return self.write(folder, title, line, tags=["daily"], mode="append", source="daily")

    # --- attachments -------------------------------------------------------------------

    def save_attachment(self, folder: str, name: str, data: bytes) -> str:
        """Store a file (a photo, a voice note) in ``folder``; returns its vault-relative path.

        Never overwrites: a taken name gets " 2", " 3"…, and the same bytes saved again (a
        redelivered message) return the existing file.
        """
        directory = self._write_folder(folder)
        stem, suffix = _attachment_name(name)
        with exclusive_lock(self._lock_file(directory)):
            taken = self._names.taken(directory)
            for copy in range(1, _MAX_COPIES + 1):
                candidate = f"{stem}{suffix}" if copy == 1 else f"{stem} {copy}{suffix}"
                clash_name = taken.get(candidate.casefold())
                path = directory / (clash_name or candidate)
                if clash_name is None:
                    try:
                        write_atomic(path, data, exclusive=True, mode=note_mode(self.root, path))
                    except FileExistsError:
                        continue
                    return self._rel(path)
                self._refuse_link_out(path)
                if path.is_file() and path.read_bytes() == data:
                    return self._rel(path)
        raise NoteExists(f"Too many attachments are already named {show(name)}.")

    # --- read --------------------------------------------------------------------------

    def read(self, path: str) -> Note:
        """The note at ``path`` (``.md`` optional), or else the note with that title or file name.

        A document's path (a PDF, a text, CSV or JSON file) gives its text, with page markers, as the
        note's content; a document whose text cannot be read says why instead."""
        query = path.strip()
        if not query:
            raise InvalidNote("Give the path or title of the note to read.")
        if is_document(query) and self.resolve(query).is_file():
            rel, text = self.read_document(query)
            name = rel.rsplit("/", 1)[-1]
            content = text.text if text.problem is None else f"(The text of {name} cannot be read: {text.problem}.)"
            if text.problem is None and text.limits is not None:
                content += f"\n\n[Left out of {name}: {text.limits}.]"
            return Note(rel, name, content, {})
        bare = query[: -len(NOTE_SUFFIX)] if query.lower().endswith(NOTE_SUFFIX) else query
        candidate = self.resolve(bare + NOTE_SUFFIX)
        found = candidate if candidate.is_file() else self._match_title(bare)
        if found is None:
            raise NoteNotFound(self._not_found_message(query, bare))
        signature = _signature(found)
        front, body = self._load(found)
        self._seen[found.resolve()] = signature
        return Note(self._rel(found), meta.title_of(front, found.stem), body, front)

    def read_document(self, path: str) -> tuple[str, DocumentText]:
        """The vault-relative path and the text of the document at ``path`` (bounded, see
        :mod:`vault.documents`), read in the sandbox (blocking: call it from a worker thread); it is put in
        line for the search index too, so a search finds it at once."""
        found = self.resolve(path)
        self._refuse_link_out(found)
        rel = self._rel(found)
        if is_document(rel):
            entry, text = read_entry(found, rel, self._reader)
            self._catalog.add(entry)
            return rel, text
        # A Markdown file is a note, indexed as notes are.
        data = found.read_bytes()
        self._catalog.record(rel, data, found.stat())
        return rel, self._reader.read(data, found.name)

    def document_text(self, data: bytes, name: str, *, max_chars: int = INDEX_CHARS) -> DocumentText:
        """The text of a document that is not (yet) in the vault, such as a PDF a link leads to, read in
        the sandbox as the vault's own are (blocking: call it from a worker thread)."""
        return self._reader.read(data, name, max_chars=max_chars)

    def _match_title(self, bare: str) -> Path | None:
        self._catalog.fresh()
        wanted = {bare.casefold(), note_stem(bare.rsplit("/", 1)[-1]).casefold()}
        names = self._catalog.index.names()
        for path, _, _ in names:
            bare_path = path[: -len(NOTE_SUFFIX)]
            if bare_path.casefold() in wanted or bare_path.rsplit("/", 1)[-1].casefold() in wanted:
                return self.root / path
        for path, title, aliases in names:
            if title.casefold() in wanted or any(alias.casefold() in wanted for alias in aliases):
                return self.root / path
        return None

    def _not_found_message(self, query: str, bare: str) -> str:
        names: dict[str, str] = {}
        for path, title, aliases in self._catalog.index.names():
            for name in (path[: -len(NOTE_SUFFIX)], path.rsplit("/", 1)[-1][: -len(NOTE_SUFFIX)], title, *aliases):
                names.setdefault(name.casefold(), path)
        close = difflib.get_close_matches(bare.casefold(), list(names), n=6, cutoff=0.6)
        suggestions = list(dict.fromkeys(names[name] for name in close))[:3]
        message = f"No note {show(query)} in the vault."
        if suggestions:
            message = message[:-1] + "; did you mean " + ", ".join(show(s) for s in suggestions) + "?"
        return message

    # --- list and search ---------------------------------------------------------------

    def list(self, folder: str = "", limit: int | None = 50) -> Listing:
        """The notes directly in ``folder`` (newest first, at most ``limit``) and its subfolders."""
        if limit is not None and limit < 0:
            raise InvalidNote("The listing limit cannot be negative.")
        directory = self.resolve(folder)
        if not directory.is_dir():
            raise NoteNotFound(f"No folder {show(folder)} in the vault.")
        self._catalog.fresh()
        relative = "" if directory == self.root else self._rel(directory)
        notes = [
            NoteSummary(path, title, tags, updated)
            for path, title, tags, updated in self._catalog.index.listing(relative, limit)
        ]
        folders = []
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    if (
                        not entry.name.startswith(".")
                        and entry.is_dir()
                        and is_inside(self.root, follow_links(Path(entry.path)))
                    ):
                        folders.append(self._rel(Path(entry.path)))
                except OSError:
                    continue  # a link that loops or cannot be read is no folder to offer
        return Listing(notes, sorted(folders))

    def search(
        self, query: str, limit: int = 10, *, tags: list[str] | None = None, folder: str | None = None
    ) -> list[SearchHit]:
        """The best matches for ``query`` in titles, bodies and tags, optionally only with all
        ``tags`` or under ``folder``; every word must match, the last one also as a prefix."""
        if not query.strip():
            raise InvalidNote("Give some words to search for.")
        if limit < 1:
            raise InvalidNote("The search limit must be at least 1.")
        if folder:
            directory = self.resolve(folder)
            folder = "" if directory == self.root else self._rel(directory)
        expression = match_expression(query)
        if expression is None:
            return []
        self._catalog.fresh()
        index = self._catalog.index
        # The notes the query names go first, whatever the meaning index is doing (hybrid.known_first).
        known = index.known_items(query, limit, tags=tags, folder=folder or None)
        wanted = limit + len(known)
        vector = self._recall.query(query) if self._recall is not None else None
        if self._recall is not None and vector is not None:
            hits = hybrid.search(
                index, self._recall, vector, query, expression, wanted, tags=tags, folder=folder or None
            )
        else:
            hits = [
                SearchHit(path, title, snippet)
                for path, title, snippet in index.search(expression, wanted, tags=tags, folder=folder or None)
            ]
        return hybrid.known_first(index, known, hits, limit)

    def related(self, path: str, limit: int = 3) -> list[Related]:
        """Up to ``limit`` other notes closest in meaning to the note at ``path`` (embedded now if it is
        not yet), those in the note's own language first; none without search by meaning."""
        if self._recall is None:
            return []
        vector = self._recall.embed_now(path)
        if vector is None:
            return []
        self._catalog.fresh()
        # More than asked for: the model puts a note's translations about as close as notes in its own
        # language, so a note in the note's language may rank after them until it gets its bonus.
        near = [n for n in self._recall.nearest(vector, limit * 4, exclude=path) if n.score >= hybrid.MIN_SIMILARITY]
        own = self._language(path)
        if own is not None:
            near.sort(key=lambda n: -(n.score + (SAME_LANGUAGE_BONUS if self._language(n.path) == own else 0.0)))
        titles = self._catalog.index.describe({n.path: 0 for n in near})
        return [Related(n.path, titles[n.path][0]) for n in near if n.path in titles][:limit]

    def _language(self, path: str) -> str | None:
        try:
            with open(self.resolve(path), encoding="utf-8", errors="replace") as file:
                return language_of(file.read(8192))
        except (OSError, VaultError):
            return None


@dataclass(frozen=True)
class _NewNote:
    """A note staged for a create: its temporary file, that file's stat, its index entry and its text."""

    file: Path
    stat: os.stat_result
    entry: Entry
    text: str


def _existing_entry(parent: Path, name: str) -> tuple[Path, int] | None:
    """The entry of ``parent`` called ``name``, or else one whose name differs only in case or
    by being made portable ("a." for "a"), with its mode (not following a symlink); None when there is none."""
    exact = parent / name
    try:
        return exact, os.lstat(exact).st_mode
    except FileNotFoundError:
        pass
    wanted = {name.casefold(), folder_name(name).casefold()}
    match = next((entry for entry in names_by_casefold(parent).items() if entry[0] in wanted), None)
    if match is None:
        return None
    try:
        return parent / match[1], os.lstat(parent / match[1]).st_mode
    except FileNotFoundError:
        return None  # gone since the listing


def _body(data: bytes) -> str:
    """The body of the note ``data``, stripped: what an undo of an append to it keeps."""
    return frontmatter.parse(data.decode("utf-8", errors="replace"))[1].strip()


def _signature(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def _attachment_name(name: str) -> tuple[str, str]:
    """A safe stem and a short, plain extension for an attachment's file name."""
    stem, dot, suffix = name.rpartition(".")
    if not dot or not suffix.isalnum() or len(suffix) > 10:
        stem, suffix = name, ""
    return note_stem(stem or "attachment"), f".{suffix.lower()}" if suffix else ""


def daily_entry(text: str, *, pattern: str = "%Y-%m-%d", when: dt.datetime | None = None) -> tuple[str, str]:
    """The day's note title (``pattern`` applied to the date) and the timestamped line for ``text``.

    The date and time are ``when``'s in its own zone (the user's, when the caller passes their
    clock's time), else the machine's local ones.
    """
    if not text.strip():
        raise InvalidNote("A daily note entry needs some text.")
    moment = when if when is not None and when.tzinfo is not None else (when or dt.datetime.now(dt.UTC)).astimezone()
    try:
        title = moment.strftime(pattern)
    except ValueError as exc:
        raise InvalidNote(f"The daily note pattern {show(pattern)} is not a date format ({exc}).") from exc
    if not title.strip():
        raise InvalidNote(f"The daily note pattern {show(pattern)} gives an empty title.")
    return title, f"- {moment:%H:%M} " + " ".join(text.split())
