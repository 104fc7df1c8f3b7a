"""SQLite records: conversation history, runs and steps (the audit trail), interactions."""

from bot.store.dead_letters import DeadLetter, DeadLetters, UnknownDeadLetter, retry_command
from bot.store.reader import RUN_STATUSES, NotePage, StoreReader, TimelineFilter
from bot.store.run_ids import MIN_PREFIX, short_id
from bot.store.store import ServedPage, Step, Store, Turn, encode_turn
from bot.store.usage import CallUsage, UsageRow

__all__ = [
    "RUN_STATUSES",
    "MIN_PREFIX",
    "CallUsage",
    "DeadLetter",
    "DeadLetters",
    "NotePage",
    "ServedPage",
    "Step",
    "Store",
    "StoreReader",
    "TimelineFilter",
    "Turn",
    "UnknownDeadLetter",
    "UsageRow",
    "encode_turn",
    "retry_command",
    "short_id",
]
