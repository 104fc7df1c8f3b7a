"""What can go wrong talking to Telegram, in the channel's own terms."""

from __future__ import annotations

import warnings
from datetime import timedelta

from telegram.error import BadRequest, RetryAfter
from telegram.warnings import PTBDeprecationWarning


class TelegramConflict(Exception):
    """Another process is polling the same bot token."""


def retry_after_seconds(error: RetryAfter) -> float:
    """How long Telegram asked us to wait, in seconds."""
    # ptb 22 warns that retry_after will become a timedelta; either form is accepted here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        retry_after = error.retry_after
    return retry_after.total_seconds() if isinstance(retry_after, timedelta) else float(retry_after)


def formatting_refused(error: BadRequest) -> bool:
    """Whether Telegram refused a message for its formatting (its entities), so the same text may
    go again as plain text; any other 400 would be refused again."""
    return "entit" in str(error).lower()
