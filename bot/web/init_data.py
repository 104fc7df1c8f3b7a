"""Telegram's proof of who opened the Mini App: the init data, checked as Telegram documents it
(https://core.telegram.org/bots/webapps#validating-data-received-via-the-mini-app).

The data-check string is every field but ``hash``, as ``key=value`` lines sorted by key; its
HMAC-SHA256 under the key HMAC-SHA256(key="WebAppData", msg=bot token), in hex, must be ``hash``.
Only Telegram and this bot know the token, so a valid hash means Telegram signed these fields,
``auth_date`` (when it signed them) says how fresh they are, and ``user`` who opened the app. The hash
names the init data whatever its encoding, so the page accepts each hash once (``bot.web.telegram``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl

__all__ = ["MAX_AGE", "InitDataRefused", "SignedUser", "signed_user"]

# Telegram signs the data as the app opens, and the page posts it at once: older data is a replay, not a visit.
MAX_AGE = timedelta(minutes=5)
# Telegram's clock and this machine's may differ a little; data from further in the future is not Telegram's.
SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class InitDataRefused(Exception):
    """The init data proves nothing (``status`` 401) or proves someone this page does not serve (403)."""

    status: int
    reason: str

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class SignedUser:
    """Who Telegram signed the init data for (``user``), when (``signed_at``), and its ``hash``."""

    user: int
    signed_at: datetime
    hash: str


def signed_user(init_data: str, *, bot_token: str, allowed: Collection[int], now: datetime) -> SignedUser:
    """The allowlisted user Telegram signed ``init_data`` for, at most :data:`MAX_AGE` before ``now``;
    raises :class:`InitDataRefused` saying why not."""
    fields = _fields(init_data)
    given = fields.pop("hash", "")
    check = "\n".join(f"{key}={fields[key]}" for key in sorted(fields))
    secret = hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()
    expected = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise InitDataRefused(403, "Telegram did not sign this init data for this bot")
    signed_at = _auth_date(fields.get("auth_date", ""))
    if now - signed_at > MAX_AGE:
        raise InitDataRefused(403, "this init data is more than 5 minutes old: open the page from Telegram again")
    if signed_at - now > SKEW:
        raise InitDataRefused(403, "this init data is dated in the future")
    user = _user_id(fields.get("user", ""))
    if user not in allowed:
        raise InitDataRefused(403, f"Telegram user {user} is not on this bot's allowlist")
    return SignedUser(user, signed_at, given)


def _fields(init_data: str) -> dict[str, str]:
    if not init_data:
        raise InitDataRefused(401, "no init data: open this page from the bot's Review button in Telegram")
    try:
        pairs = parse_qsl(init_data, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise InitDataRefused(401, "the init data is not a query string") from None
    fields = dict(pairs)
    # A field given twice would be checked as one value and read as another.
    if len(fields) != len(pairs):
        raise InitDataRefused(401, "the init data names a field twice")
    if "hash" not in fields:
        raise InitDataRefused(401, "the init data has no hash")
    return fields


def _auth_date(value: str) -> datetime:
    try:
        return datetime.fromtimestamp(int(value), UTC)
    except (ValueError, OverflowError, OSError):
        raise InitDataRefused(403, "the init data has no valid auth_date") from None


def _user_id(value: str) -> int:
    try:
        user = json.loads(value)
    except ValueError:
        user = None
    # JSON's true is a Python int too; an id is a number and nothing else.
    if not isinstance(user, dict) or type(user.get("id")) is not int:
        raise InitDataRefused(403, "the init data names no user")
    return int(user["id"])
