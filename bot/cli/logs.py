"""Where log lines go: warnings and errors to a file beside the store, always; with ``-v`` also
everything from INFO up to standard error. Without ``-v`` the terminal chat shows only the
conversation.

URLs carry the Telegram bot token, so the HTTP libraries' request lines (INFO) are never logged,
to the file or anywhere.

The log is its owner's alone (:mod:`bot.private_files`), its rotated files too. Log lines quote
outside text (a stranger's name, a server's error), so every line is one record: control
characters in a message are written as escapes (``\\n``, ``\\x1b``), and a traceback's lines are
indented, so nothing from outside can start a line that looks like a record of its own.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path

from bot.private_files import make_private_folder, open_private, tighten
from bot.settings import Settings

__all__ = ["LineFormatter", "PrivateLogFile", "escape_controls", "log_file", "log_files", "send_logs"]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# A year of a busy bot's warnings fits in a few megabytes; older ones rotate away.
MAX_BYTES = 1024 * 1024
KEPT_FILES = 3

# C0 and C1 controls and DEL (a tab is harmless), the line and paragraph separators some viewers
# break lines at, and the direction overrides that make text show in another order than it reads.
_CONTROLS = [*range(0x00, 0x09), *range(0x0A, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
_CONTROLS += [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES = {code: repr(chr(code))[1:-1] if code < 0x100 else f"\\u{code:04x}" for code in _CONTROLS}
_INDENT = "    "


def escape_controls(text: str) -> str:
    """``text`` with every control character written as its escape: one line, shown as it reads."""
    return text if text.isprintable() else text.translate(_ESCAPES)


class LineFormatter(logging.Formatter):
    """One record, one line: the message (with its arguments) escaped; a traceback or stack below it
    indented, each of its lines escaped."""

    def format(self, record: logging.LogRecord) -> str:
        # Not Formatter.format: it would reuse a traceback another handler's formatter cached on the record.
        escaped = logging.makeLogRecord(record.__dict__)
        escaped.message = escape_controls(record.getMessage())
        if self.usesTime():
            escaped.asctime = self.formatTime(record, self.datefmt)
        lines = [self.formatMessage(escaped)]
        if record.exc_info:
            lines.append(_indented(self.formatException(record.exc_info)))
        elif record.exc_text:
            lines.append(_indented(record.exc_text))
        if record.stack_info:
            lines.append(_indented(self.formatStack(record.stack_info)))
        return "\n".join(lines)


def _indented(text: str) -> str:
    return "\n".join(_INDENT + escape_controls(line) for line in text.splitlines())


class PrivateLogFile(RotatingFileHandler):
    """The rotating log file, each file of it created its owner's only."""

    def _open(self) -> TextIOWrapper:
        return open(self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors, opener=open_private)


def log_file(settings: Settings) -> Path:
    """The log file: beside the store, named after it (``data/vaultbot.db`` → ``data/vaultbot.log``)."""
    return settings.store.path.with_suffix(".log")


def log_files(settings: Settings) -> list[Path]:
    """The log file and the rotated files kept beside it (``vaultbot.log.1`` …)."""
    path = log_file(settings)
    return [path, *(path.with_name(f"{path.name}.{n}") for n in range(1, KEPT_FILES + 1))]


def send_logs(settings: Settings, *, verbose: bool) -> Callable[[], None]:
    """Send warnings and errors to :func:`log_file` and, with ``verbose``, INFO and up to standard
    error; a file that cannot be opened sends its lines to standard error instead, rather than
    losing them. Returns the function that takes the handlers away again (and closes the file)."""
    root = logging.getLogger()
    handlers: list[logging.Handler] = []
    path = log_file(settings)
    file: RotatingFileHandler | None
    try:
        make_private_folder(path.parent)
        file = PrivateLogFile(path, maxBytes=MAX_BYTES, backupCount=KEPT_FILES, encoding="utf-8")
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
        handler.setFormatter(LineFormatter(FORMAT))
        root.addHandler(handler)
    previous = root.level
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    # httpx's lines carry the Telegram token in URLs; aioimaplib's INFO lines carry pieces of mail.
    for name in ("httpx", "httpx2", "aioimaplib"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # python-telegram-bot logs an answer that is not JSON whole, and a web page answering in the Bot API's
    # place may echo the address, token and all; the channel says what went wrong in a line of its own.
    logging.getLogger("telegram.request.BaseRequest").setLevel(logging.CRITICAL)
    for kept in log_files(settings):  # left readable by an older version: said in the log just opened
        tighten(kept)

    def take_away() -> None:
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(previous)

    return take_away
