"""SQLite records: conversation history, runs and steps (the audit trail), interactions."""

from bot.store.reader import RUN_STATUSES, StoreReader, TimelineFilter
from bot.store.store import Store, Turn, encode_turn
from bot.store.usage import CallUsage, UsageRow

__all__ = [
    "RUN_STATUSES",
    "CallUsage",
    "Store",
    "StoreReader",
    "TimelineFilter",
    "Turn",
    "UsageRow",
    "encode_turn",
]
