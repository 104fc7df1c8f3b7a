"""SQLite records: conversation history, runs and steps (the audit trail), interactions."""

from bot.store.store import Store, Turn

__all__ = ["Store", "Turn"]
