"""Where log lines go: warnings and errors to a file beside the store, always; with ``-v`` also
everything from INFO up to standard error. Without ``-v`` the terminal chat shows only the
conversation.

URLs carry the Telegram bot token, so the HTTP libraries' request lines (INFO) are never logged,
to the file or anywhere.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path

from bot.settings import Settings

__all__ = ["log_file", "send_logs"]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# A year of a busy bot's warnings fits in a few megabytes; older ones rotate away.
MAX_BYTES = 1024 * 1024
KEPT_FILES = 3


def log_file(settings: Settings) -> Path:
    """The log file: beside the store, named after it (``data/vaultbot.db`` → ``data/vaultbot.log``)."""
    return settings.store.path.with_suffix(".log")


def send_logs(settings: Settings, *, verbose: bool) -> Callable[[], None]:
    """Send warnings and errors to :func:`log_file` and, with ``verbose``, INFO and up to standard
    error; a file that cannot be opened sends its lines to standard error instead, rather than
    losing them. Returns the function that takes the handlers away again (and closes the file)."""
    root = logging.getLogger()
    handlers: list[logging.Handler] = []
    path = log_file(settings)
    file: RotatingFileHandler | None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        file = RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=KEPT_FILES, encoding="utf-8")
    except OSError:
        file = None  # the store beside it cannot be opened either, and the command says so
    else:
        file.setLevel(logging.WARNING)
        handlers.append(file)
    if verbose or file is None:
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setLevel(logging.INFO if verbose else logging.WARNING)
        handlers.append(stderr)
    for handler in handlers:
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
    previous = root.level
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING)

    def take_away() -> None:
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(previous)

    return take_away
