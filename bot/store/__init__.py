"""SQLite records: conversation history, runs and steps (the audit trail), interactions, and the
strangers refused on every channel."""

from bot.store.changes import Changes, ChangeSet
from bot.store.dead_letters import DeadLetter, DeadLetters, UnknownDeadLetter, retry_command
from bot.store.reader import RUN_STATUSES, NotePage, StoreReader, TimelineFilter
from bot.store.run_ids import MIN_PREFIX, short_id
from bot.store.store import ServedPage, Step, Store, Turn, encode_turn
from bot.store.strangers import MOST_STRANGERS, REFUSAL_WINDOW, Refusal, Strangers
from bot.store.usage import CallUsage, UsageRow

__all__ = [
    "RUN_STATUSES",
    "MIN_PREFIX",
    "MOST_STRANGERS",
    "REFUSAL_WINDOW",
    "CallUsage",
    "ChangeSet",
    "Changes",
    "DeadLetter",
    "DeadLetters",
    "NotePage",
    "Refusal",
    "ServedPage",
    "Step",
    "Store",
    "Strangers",
    "StoreReader",
    "TimelineFilter",
    "Turn",
    "UnknownDeadLetter",
    "UsageRow",
    "encode_turn",
    "retry_command",
    "short_id",
]
