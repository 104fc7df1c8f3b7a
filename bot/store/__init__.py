"""SQLite records: conversation history, runs and steps (the audit trail), interactions."""

from bot.store.dead_letters import MIN_PREFIX, DeadLetter, DeadLetters, UnknownDeadLetter
from bot.store.reader import RUN_STATUSES, StoreReader, TimelineFilter
from bot.store.store import RunEnding, Store, Turn, encode_turn
from bot.store.usage import CallUsage, UsageRow

__all__ = [
    "RUN_STATUSES",
    "MIN_PREFIX",
    "CallUsage",
    "DeadLetter",
    "DeadLetters",
    "RunEnding",
    "Store",
    "StoreReader",
    "TimelineFilter",
    "Turn",
    "UnknownDeadLetter",
    "UsageRow",
    "encode_turn",
]
