"""The SQLite database the bus and the store share: one aiosqlite connection per file
(:mod:`bot.db.connection`), a read-only one for the review page (:mod:`bot.db.readonly`), the
stored time format (:mod:`bot.db.times`), and how the long-running loops ride out a database that
is briefly unusable (:mod:`bot.db.outage`)."""

from __future__ import annotations

from bot.db.connection import BUSY_TIMEOUT_MS, WAL_FILES, Database, Row, Tx
from bot.db.outage import Outage, is_transient
from bot.db.readonly import ReadOnlyDatabase, Reads
from bot.db.times import now_iso, to_iso

__all__ = [
    "BUSY_TIMEOUT_MS",
    "WAL_FILES",
    "Database",
    "Outage",
    "ReadOnlyDatabase",
    "Reads",
    "Row",
    "Tx",
    "is_transient",
    "now_iso",
    "to_iso",
]
