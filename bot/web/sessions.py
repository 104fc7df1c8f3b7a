"""The page's sessions: what the cookie holds after a person signed in (with the token, a sign-in link
or Telegram's init data).

A session is its end time and a random id, signed with a key this process made when it started: the
cookie is never the token, a session lasts :data:`SESSION_SECONDS` at most (the server checks the end
time; the cookie's ``Max-Age`` only tidies the browser), signing out ends it at once, and a restart of
the page ends them all.

Over http (127.0.0.1) the cookie is ``SameSite=Strict``. Over https (behind the proxy, which says so
with ``X-Forwarded-Proto``; uvicorn believes it from 127.0.0.1 only) it is ``Secure; SameSite=None;
Partitioned``: Telegram Web shows the Mini App in a frame of web.telegram.org, where a strict cookie is
never sent, and a partitioned one is kept for that frame alone. No other site may frame the page
(``frame-ancestors``), and the gate refuses a post from another origin.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable

from starlette.types import Scope

from bot.web.limits import Once

__all__ = ["COOKIE", "SESSION_SECONDS", "Sessions", "clear_cookie", "set_cookie"]

COOKIE = "vaultbot_review"
# A working day; then the token, a new link or the Mini App signs in again.
SESSION_SECONDS = 12 * 3600


class Sessions:
    """Starts, checks and ends sessions, on ``clock`` (seconds since the epoch)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._key = secrets.token_bytes(32)
        self._ended = Once(clock)

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def start(self) -> str:
        """A new session's cookie value."""
        body = f"{int(self._clock()) + SESSION_SECONDS:x}.{secrets.token_hex(16)}"
        return f"{body}.{self._mac(body)}"

    def _read(self, value: str) -> tuple[int, str] | None:
        body, _, mac = value.rpartition(".")
        if not hmac.compare_digest(mac.encode(), self._mac(body).encode()):
            return None
        ends, _, session = body.partition(".")
        return int(ends, 16), session

    def admits(self, value: str) -> bool:
        """``value`` is a session this process started that has not ended."""
        read = self._read(value)
        if read is None or read[0] <= self._clock():
            return False
        ends, session = read
        return not self._ended.seen(session)

    def end(self, value: str) -> None:
        """Sign out: the session ``value`` names (if any) is admitted no more."""
        read = self._read(value)
        if read is not None:
            self._ended.first(read[1], read[0])


def set_cookie(value: str, scope: Scope, root: str) -> str:
    """The ``Set-Cookie`` value that keeps session ``value`` for the page under ``root`` (its public
    path: ``/review`` covers ``/review`` and ``/review/…``, not ``/reviews``)."""
    return f"{COOKIE}={value}; Path={root or '/'}; Max-Age={SESSION_SECONDS}; {_flags(scope)}"


def clear_cookie(scope: Scope, root: str) -> str:
    """The ``Set-Cookie`` value that makes the browser forget the session."""
    return f"{COOKIE}=; Path={root or '/'}; Max-Age=0; {_flags(scope)}"


def _flags(scope: Scope) -> str:
    if scope["scheme"] == "https":
        return "HttpOnly; Secure; SameSite=None; Partitioned"
    return "HttpOnly; SameSite=Strict"
