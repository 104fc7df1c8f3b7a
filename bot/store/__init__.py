"""SQLite records: conversation history, runs and steps (the audit trail), interactions."""

from bot.store.store import Store, Turn
from bot.store.usage import CallUsage, UsageRow

__all__ = ["CallUsage", "Store", "Turn", "UsageRow"]
