"""The SQLite database the bus and the store share (:mod:`bot.db.connection`), and how the
long-running loops ride out a database that is briefly unusable (:mod:`bot.db.outage`)."""

from __future__ import annotations

from bot.db.connection import Database, Row, Tx, now_iso, to_iso
from bot.db.outage import Outage, is_transient

__all__ = ["Database", "Outage", "Row", "Tx", "is_transient", "now_iso", "to_iso"]
