"""SQLite records: conversation history, runs and steps (the audit trail), interactions."""

from bot.store.reader import RUN_STATUSES, NotePage, StoreReader, TimelineFilter
from bot.store.readonly import ReadOnlyDatabase, Reads
from bot.store.store import RunEnding, ServedPage, Store, Turn, encode_turn
from bot.store.usage import CallUsage, UsageRow

__all__ = [
    "RUN_STATUSES",
    "CallUsage",
    "NotePage",
    "ReadOnlyDatabase",
    "Reads",
    "RunEnding",
    "ServedPage",
    "Store",
    "StoreReader",
    "TimelineFilter",
    "Turn",
    "UsageRow",
    "encode_turn",
]
