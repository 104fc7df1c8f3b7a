"""What can go wrong talking to Telegram, in the channel's own terms."""

from __future__ import annotations

from datetime import timedelta

from telegram.error import BadRequest, RetryAfter


class TelegramConflict(Exception):
    """Another process is polling the same bot token."""


class TelegramRefused(Exception):
    """Telegram (or whatever answers at the configured address) will not serve this bot token:
    trying again cannot help. The message names the setting to fix, never the token."""


class TelegramUnreachable(Exception):
    """Telegram could not be reached, or asked to wait: it may answer later. ``retry_after`` is the
    wait Telegram asked for, if it did."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def retry_after_seconds(error: RetryAfter) -> float:
    """How long Telegram asked us to wait, in seconds (ptb gives a timedelta or, before 23 unless
    ``PTB_TIMEDELTA`` is set, a number)."""
    retry_after = error.retry_after
    return retry_after.total_seconds() if isinstance(retry_after, timedelta) else float(retry_after)


def formatting_refused(error: BadRequest) -> bool:
    """Whether Telegram refused a message for its formatting (its entities), so the same text may
    go again as plain text; any other 400 would be refused again."""
    return "entit" in str(error).lower()
