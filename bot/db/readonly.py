"""The store opened so that it cannot be written: what the review page reads through.

SQLite enforces it: the connection is opened with ``mode=ro``, so every statement that would
change the file fails with "attempt to write a readonly database", and the database file itself
is held open read-only. The file must exist and be migrated (a writable connection opens it
first). In WAL mode SQLite still opens the ``-wal`` and ``-shm`` files for reading and writing
(readers record in ``-shm`` which part of the log they read); it never writes pages through them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol
from urllib.parse import quote

import aiosqlite

from bot.db.connection import BUSY_TIMEOUT_MS, Params, Row

__all__ = ["ReadOnlyDatabase", "Reads"]


class Reads(Protocol):
    """What a reader of the store needs: queries, no writes."""

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """The rows of one query."""
        ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
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
            await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.row_factory = Row
        except BaseException:
            await conn.close()
            raise
        return cls(conn)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """The rows of one query (one trip to the connection's thread)."""
        return list(await self._conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of one query, or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def close(self) -> None:
        """Close the connection (aiosqlite's thread would otherwise keep the process from exiting)."""
        await self._conn.close()
