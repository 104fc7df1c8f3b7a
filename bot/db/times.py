"""Instants as the database stores them: ISO 8601 UTC text in one fixed format."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now_iso", "to_iso"]


def to_iso(moment: datetime) -> str:
    """``moment`` as ISO 8601 UTC text, the one format stored (naive datetimes are taken as UTC).

    One fixed format keeps text comparison equal to time comparison in SQL.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def now_iso() -> str:
    """The current time as stored: ISO 8601 UTC text (what :func:`to_iso` gives, without its checks)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")
