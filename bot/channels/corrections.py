"""A person's edit of a message they sent: the channel passes the new text on as a correction of the
earlier one (the model updates what it filed), never as a new message of its own."""

from __future__ import annotations

__all__ = ["CORRECTION"]

# The line before the edited text, as the model reads it.
CORRECTION = "[Correction: I edited an earlier message. It now reads:]"
