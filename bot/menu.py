"""The slash commands every channel offers, by name: the runner answers them, a channel only shows the list.

A room of its own so a channel can build its menu without importing the runner (and the model's SDK with it).
"""

from __future__ import annotations

# (command, what it does), in the order a channel's menu shows them.
COMMANDS: list[tuple[str, str]] = [
    ("start", "Say hello and see what I can do"),
    ("help", "How to use vaultbot"),
    ("new", "Start a fresh conversation"),
    ("note", "File the text as a note, no questions asked"),
    ("find", "Search your notes"),
    ("log", "Show the latest entries of the interaction log"),
    ("status", "What mode I'm in and how things are going"),
    ("review", "Open the review page"),
    ("reminders", "List your pending reminders"),
    ("cancel", "Cancel a reminder by its id"),
    ("undo", "Take back what my last change to your notes did"),
]
