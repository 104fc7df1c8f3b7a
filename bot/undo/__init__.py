"""Change sets of runs and taking them back: the vault records what each write changed
(:mod:`vault.changes`), this decides what an undo takes back and says what it did."""

from bot.undo.attachments import brought
from bot.undo.chat import undo_in_chat
from bot.undo.naming import NoRun, latest, named, refuse_undone
from bot.undo.undoer import Item, Report, Undoer
from bot.undo.words import log_line, told

__all__ = [
    "Item",
    "NoRun",
    "Report",
    "Undoer",
    "brought",
    "latest",
    "log_line",
    "named",
    "refuse_undone",
    "told",
    "undo_in_chat",
]
