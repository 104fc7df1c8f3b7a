"""The store opened so that it cannot be written: what the review page reads through.

SQLite enforces it: the connection is opened with ``mode=ro``, so every statement that would
change the file fails with "attempt to write a readonly database", and the database file itself
is held open read-only. The file must exist and be migrated (a writable connection opens it
first). In WAL mode SQLite still opens the ``-wal`` and ``-shm`` files for reading and writing
(readers record in ``-shm`` which part of the log they read); it never writes pages through them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import aiosqlite

__all__ = ["ReadOnlyDatabase", "Reads"]

Params = Sequence[Any] | Mapping[str, Any]

_BUSY_TIMEOUT_MS = 5000


class Reads(Protocol):
    """What a reader of the store needs: queries, no writes."""

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        """The rows of one query."""
        ...

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        """The first row of one query, or None."""
        ...


class ReadOnlyDatabase:
    """A read-only connection to the store. Open with :meth:`open`; always :meth:`close`."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    @classmethod
    async def open(cls, path: Path) -> ReadOnlyDatabase:
        """Open the store at ``path`` read-only (it must exist)."""
        uri = f"file:{quote(str(Path(path).resolve()))}?mode=ro"
        conn = await aiosqlite.connect(uri, uri=True)
        try:
            await conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            conn.row_factory = sqlite3.Row
        except BaseException:
            await conn.close()
            raise
        return cls(conn)

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        """The rows of one query."""
        async with self._conn.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        """The first row of one query, or None."""
        async with self._conn.execute(sql, params) as cursor:
            row: sqlite3.Row | None = await cursor.fetchone()
            return row

    async def close(self) -> None:
        """Close the connection (aiosqlite's thread would otherwise keep the process from exiting)."""
        await self._conn.close()
