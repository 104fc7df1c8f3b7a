"""The search index: one SQLite file in the vault's private folder, FTS5 over title, body and tags.

It is a cache of the Markdown files, never the source of truth: it can be deleted at any time and
is rebuilt from the disk. Rows carry each file's size and mtime so a sync re-reads only what changed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vault.files import create_private_file

log = logging.getLogger(__name__)

# Title matches weigh most, then tags, then the body (bm25 weights, in column order).
_WEIGHTS = (10.0, 1.0, 4.0)
_WORD = re.compile(r"\w+", re.UNICODE)
_SNIPPET_TOKENS = 24
# Bumped whenever the schema changes: the index is a cache, so an old one is dropped and rebuilt.
INDEX_VERSION = 3
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    id       INTEGER PRIMARY KEY,
    path     TEXT NOT NULL UNIQUE,
    folder   TEXT NOT NULL,
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256   TEXT NOT NULL,
    title    TEXT NOT NULL,
    tags     TEXT NOT NULL,
    aliases  TEXT NOT NULL,
    updated  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS files_by_folder ON files (folder, updated);
CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(title, body, tags, tokenize = 'unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS notes_vocab USING fts5vocab(notes_fts, 'row');
CREATE TABLE IF NOT EXISTS names (
    key  TEXT NOT NULL,
    kind INTEGER NOT NULL,
    id   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS names_by_key ON names (key, kind);
CREATE INDEX IF NOT EXISTS names_by_id ON names (id);
"""
# The kinds of name a note is known by, in the order a match on them counts: its title, file name or an
# alias first, then one of its headings.
NAME, HEADING = 0, 1
# A query this short finds names only whole: "can" would start half the vault's titles.
_PREFIX_CHARS = 4
# Names looked at for one query, at most, in the order of their keys (a name before the longer ones it
# starts, a title before a heading of the same words): "Overview" may head thousands of notes.
_NAMES_LOOKED_AT = 200
# Headings a note is known by, at most (a 10 MB log pasted in has no business filling the table).
_MAX_HEADINGS = 200
_HEADING = re.compile(r"#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"(```|~~~)")
# Above every character: a key and everything after it, for a prefix range over the names index.
_LAST = "\U0010ffff"


# (size, mtime_ns, sha256) of every indexed note by path, as a sync saw them.
Snapshot = dict[str, tuple[int, int, str]]


@dataclass(frozen=True)
class Entry:
    """What the index keeps about one note."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str
    tags: list[str]
    aliases: list[str]
    updated: str
    body: str

    @property
    def folder(self) -> str:
        """The note's folder, vault-relative ("" for the root)."""
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""


def fold(word: str) -> str:
    """``word`` as the keyword index stores terms: lower case, without diacritics."""
    decomposed = unicodedata.normalize("NFD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def name_key(text: str) -> str:
    """``text`` as a name is looked up: folded, its words joined by single spaces, punctuation dropped
    ("Getting started!" and "getting  started" are the same name)."""
    return " ".join(_WORD.findall(fold(text)))


def headings(body: str) -> list[str]:
    """The Markdown headings of ``body`` (ATX, ``# Title``), leaving out lines in fenced code (a shell
    comment is no heading)."""
    found: list[str] = []
    fenced = False
    for line in body.splitlines():
        stripped = line.lstrip()
        if _FENCE.match(stripped):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(stripped)):
            found.append(match.group(1))
            if len(found) == _MAX_HEADINGS:
                break
    return found


def _names(entry: Entry) -> dict[str, int]:
    """Every name ``entry`` is known by, as a key, with the most telling kind it is known by under it."""
    base = entry.path.rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base else base
    keys: dict[str, int] = {}
    for text in headings(entry.body):
        keys[name_key(text)] = HEADING
    for text in (entry.title, stem, *entry.aliases):
        keys[name_key(text)] = NAME
    keys.pop("", None)
    return keys


def match_expression(query: str) -> str | None:
    """``query`` as a safe FTS5 expression: every word quoted, all required, the last as a prefix.

    Quoting each word means no user input is ever read as FTS5 syntax (AND, NEAR, *, -, :).
    """
    words = _WORD.findall(query)
    if not words:
        return None
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    quoted[-1] += "*"
    return " ".join(quoted)


class Queued:
    """An entry in line for the index (:meth:`Index.queue`), until a commit has taken it (:meth:`Index.flush`)."""

    __slots__ = ("entry", "done", "error")

    def __init__(self, entry: Entry) -> None:
        self.entry = entry
        self.done = False
        self.error: BaseException | None = None


# "file is not a database" and "database disk image is malformed": the file cannot serve as an index.
_BROKEN = {sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT}


def _open(path: Path) -> sqlite3.Connection:
    """The index's connection, its schema made (or remade, when it is of another version)."""
    create_private_file(path)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=5000")
        if conn.execute("PRAGMA user_version").fetchone()[0] != INDEX_VERSION:
            conn.executescript(
                "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS notes_vocab; DROP TABLE IF EXISTS notes_fts;"
            )
            conn.execute(f"PRAGMA user_version={INDEX_VERSION}")
        conn.executescript(_SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


class Index:
    """The FTS5 index of one vault. Thread-safe: the vault is used from worker threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # vaultbot's own writes, in line to be committed together (group commit: see _wait()).
        self._line: list[Queued] = []
        self._line_changed = threading.Condition()
        self._committing = False
        # The last entry queued: once it is committed, so is every entry queued before it.
        self._last: Queued | None = None
        try:
            self._conn = _open(path)
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorcode & 0xFF not in _BROKEN:  # the primary code of an extended one
                raise  # locked, read-only, a full disk: the file may be fine, so it is kept
            # The index is only a cache of the notes: a damaged file (a crash mid-write on a
            # disk that lies about fsync, a sync tool's half copy) is set aside and rebuilt.
            aside = path.with_name(f"{path.name}.broken")
            log.warning("The search index %s is damaged (%s); it is moved to %s and rebuilt.", path, exc, aside.name)
            os.replace(path, aside)
            for suffix in ("-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            self._conn = _open(path)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()

    def known(self) -> Snapshot:
        """(size, mtime_ns, sha256) of every indexed note by path."""
        with self._lock:
            rows = self._conn.execute("SELECT path, size, mtime_ns, sha256 FROM files")
            return {row[0]: (row[1], row[2], row[3]) for row in rows}

    def touch(self, stamps: Iterable[tuple[str, int, int]], *, expected: Snapshot) -> None:
        """Record new (path, size, mtime_ns) for notes whose content did not change (a sync touched
        them), unless a row changed since the sync's ``expected`` snapshot."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for path, size, mtime in stamps:
                    if self._current(path) == expected.get(path):
                        self._conn.execute(
                            "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime, path)
                        )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def _current(self, path: str) -> tuple[int, int, str] | None:
        row = self._conn.execute("SELECT size, mtime_ns, sha256 FROM files WHERE path = ?", (path,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def update(
        self, entries: Iterable[Entry], removed: Iterable[str] = (), *, expected: Snapshot | None = None
    ) -> None:
        """Index (or re-index) ``entries`` and forget ``removed`` paths, in one transaction.

        A sync passes the ``expected`` snapshot it started from (:meth:`known`): a row that changed
        since (vaultbot wrote the note meanwhile, from fresher content) is left alone, so a slow
        sync never puts older text back over a newer write.
        """
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                for path in removed:
                    if expected is None or self._current(path) == expected.get(path):
                        self._delete(path)
                for entry in entries:
                    if expected is not None and self._current(entry.path) != expected.get(entry.path):
                        continue
                    self._delete(entry.path)
                    cursor = conn.execute(
                        "INSERT INTO files (path, folder, size, mtime_ns, sha256, title, tags, aliases, updated) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            entry.path,
                            entry.folder,
                            entry.size,
                            entry.mtime_ns,
                            entry.sha256,
                            entry.title,
                            json.dumps(entry.tags, ensure_ascii=False),
                            json.dumps(entry.aliases, ensure_ascii=False),
                            entry.updated,
                        ),
                    )
                    conn.execute(
                        "INSERT INTO notes_fts (rowid, title, body, tags) VALUES (?, ?, ?, ?)",
                        (cursor.lastrowid, entry.title, entry.body, " ".join(entry.tags)),
                    )
                    conn.executemany(
                        "INSERT INTO names (key, kind, id) VALUES (?, ?, ?)",
                        [(key, kind, cursor.lastrowid) for key, kind in _names(entry).items()],
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def queue(self, entry: Entry) -> None:
        """Put ``entry`` (a note vaultbot just wrote) in line for the index, after every entry queued
        before it: a writer queues under its folder's lock, so a later write of a note always lands last."""
        queued = Queued(entry)
        with self._line_changed:
            self._line.append(queued)
            self._last = queued

    def pending(self) -> int:
        """How many entries are in line, not yet taken for a commit."""
        return len(self._line)

    def flush(self) -> None:
        """Return once every entry queued so far is committed; raise why, if the last commit failed."""
        last = self._last
        if last is not None and not last.done:
            self._wait(last)

    def _wait(self, queued: Queued) -> None:
        """Return once ``queued`` is in the index (searchable), or raise why it could not be indexed.

        Group commit: one waiter commits everything in line in one transaction while the others
        wait, so notes pay for a share of one commit instead of one each (~0.15 ms of CPU and ~9 WAL
        pages for one note alone, ~0.03 ms and under one page each in a commit of 64).
        """
        with self._line_changed:
            while not queued.done:
                if self._committing:
                    self._line_changed.wait()
                    continue
                batch, self._line = self._line, []
                self._committing = True
                self._line_changed.release()
                error: BaseException | None = None
                try:
                    self.update(item.entry for item in batch)
                except BaseException as exc:  # every writer in the batch hears of it, not just this one
                    error = exc
                finally:
                    self._line_changed.acquire()
                    self._committing = False
                    for item in batch:
                        item.done, item.error = True, error
                    self._line_changed.notify_all()
        if queued.error is not None:
            raise queued.error

    def _delete(self, path: str) -> None:
        row = self._conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None:
            self._conn.execute("DELETE FROM notes_fts WHERE rowid = ?", (row[0],))
            self._conn.execute("DELETE FROM names WHERE id = ?", (row[0],))
            self._conn.execute("DELETE FROM files WHERE id = ?", (row[0],))

    def search(
        self, expression: str, limit: int, *, tags: list[str] | None = None, folder: str | None = None
    ) -> list[tuple[str, str, str]]:
        """(path, title, snippet) of the best matches, best first."""
        sql = [
            "SELECT f.path, f.title, snippet(notes_fts, 1, '', '', '…', ?) FROM notes_fts",
            "JOIN files f ON f.id = notes_fts.rowid WHERE notes_fts MATCH ?",
        ]
        params: list[object] = [_SNIPPET_TOKENS, expression]
        _narrow(sql, params, tags, folder)
        sql.append(f"ORDER BY bm25(notes_fts, {', '.join(map(str, _WEIGHTS))}), f.path LIMIT ?")
        params.append(limit)
        with self._lock:
            return [(r[0], r[1], " ".join(r[2].split())) for r in self._conn.execute(" ".join(sql), params)]

    def known_items(
        self, query: str, limit: int, *, tags: list[str] | None = None, folder: str | None = None
    ) -> list[tuple[str, int, int]]:
        """(path, tier, length of the name matched) of the notes ``query`` names: tier 0 when it is a note's
        title, file name or alias, 1 one of its headings; only when it is none of those, 2 and 3 when it is the
        start of one. Each note at its best tier and shortest name, best first."""
        key = name_key(query)
        if not key:
            return []
        # Whole names first, through the index on their keys; the starts of names (a range that may hold
        # thousands of names for a short query) only when no name is the query itself.
        ranges = [key, key + _LAST] if len(key) >= _PREFIX_CHARS else [key]
        for upper in ranges:
            sql = [
                "SELECT f.path, min(n.kind + CASE WHEN n.key = ? THEN 0 ELSE 2 END) AS tier,",
                "min(length(n.key)) AS size",
                "FROM (SELECT key, kind, id FROM names WHERE key >= ? AND key <= ? ORDER BY key, kind LIMIT ?) n",
                "JOIN files f ON f.id = n.id WHERE 1",
            ]
            params: list[object] = [key, key, upper, _NAMES_LOOKED_AT]
            _narrow(sql, params, tags, folder)
            sql.append("GROUP BY f.path ORDER BY tier, size, f.path LIMIT ?")
            params.append(limit)
            with self._lock:
                found = [(r[0], r[1], r[2]) for r in self._conn.execute(" ".join(sql), params)]
            if found:
                return found
        return []

    def any_words(self, words: list[str], limit: int) -> list[tuple[str, str, str]]:
        """(path, title, snippet) of the notes with the most of ``words`` by bm25, best first."""
        expression = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
        return self.search(expression, limit)

    def frequencies(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """How many notes there are, and in how many of them each of ``terms`` (folded as the index folds) occurs."""
        with self._lock:
            total = self._conn.execute("SELECT count(*) FROM files").fetchone()[0]
            found = dict(
                self._conn.execute(
                    "SELECT term, doc FROM notes_vocab WHERE term IN (SELECT value FROM json_each(?))",
                    (json.dumps(terms),),
                ).fetchall()
            )
        return total, {term: found.get(term, 0) for term in terms}

    def holding(self, term: str, paths: list[str]) -> set[str]:
        """Which of ``paths`` contain ``term`` (in title, body or tags)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT f.path FROM notes_fts JOIN files f ON f.id = notes_fts.rowid WHERE notes_fts MATCH ? "
                "AND notes_fts.rowid IN (SELECT id FROM files WHERE path IN (SELECT value FROM json_each(?)))",
                ('"' + term.replace('"', '""') + '"', json.dumps(paths)),
            ).fetchall()
        return {row[0] for row in rows}

    def describe(
        self, starts: dict[str, int], *, tags: list[str] | None = None, folder: str | None = None
    ) -> dict[str, tuple[str, str]]:
        """(title, excerpt from each note's ``starts`` offset) of the notes among ``starts`` that are in
        the index, have all ``tags`` and lie under ``folder``."""
        sql = [
            "SELECT f.path, f.title, substr(n.body, s.value + 1, 400) FROM json_each(?) s",
            "JOIN files f ON f.path = s.key JOIN notes_fts n ON n.rowid = f.id WHERE 1",
        ]
        params: list[object] = [json.dumps(starts)]
        _narrow(sql, params, tags, folder)
        with self._lock:
            rows = self._conn.execute(" ".join(sql), params).fetchall()
        return {row[0]: (row[1], " ".join(row[2].split()[:_SNIPPET_TOKENS])) for row in rows}

    def listing(self, folder: str, limit: int | None) -> list[tuple[str, str, list[str], str]]:
        """(path, title, tags, updated) of the notes directly in ``folder``, newest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT path, title, tags, updated FROM files WHERE folder = ? ORDER BY updated DESC, path DESC "
                "LIMIT ?",
                (folder, -1 if limit is None else limit),
            ).fetchall()
        return [(r[0], r[1], json.loads(r[2]), r[3]) for r in rows]

    def names(self) -> list[tuple[str, str, list[str]]]:
        """(path, title, aliases) of every note, for finding a note by its title."""
        with self._lock:
            rows = self._conn.execute("SELECT path, title, aliases FROM files ORDER BY path").fetchall()
        return [(r[0], r[1], json.loads(r[2])) for r in rows]


def _narrow(sql: list[str], params: list[object], tags: list[str] | None, folder: str | None) -> None:
    """Add to a query over ``files f`` the conditions that keep the notes with all ``tags`` under ``folder``."""
    for tag in tags or []:
        sql.append("AND EXISTS (SELECT 1 FROM json_each(f.tags) WHERE lower(value) = lower(?))")
        params.append(tag.lstrip("#"))
    if folder:
        sql.append("AND (f.folder = ? OR f.folder LIKE ? ESCAPE '\\')")
        params += [folder, _like_prefix(folder)]


def _like_prefix(folder: str) -> str:
    escaped = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"
