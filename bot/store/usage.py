"""Token usage and cost, one row per model call, and the questions asked of it.

The rows are written on the hot path (beside the model call's step); the questions (spend today,
usage per day in the user's zone, a run's cost) are answered with the time and run indexes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from bot.clock import day_bounds
from bot.db import Database, Reads, to_iso

__all__ = ["CallUsage", "UsageRow", "record_usage", "spend_between", "usage_by_day", "usage_statement"]


@dataclass(frozen=True)
class CallUsage:
    """What one model call used and cost, and when. ``model`` is the name sent to the API;
    ``api_model`` the name the API answered with, when it says (e.g. a dated snapshot id)."""

    at: datetime
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    api_model: str = ""


@dataclass(frozen=True)
class UsageRow:
    """Usage of one model (the name sent to the API) on one day (``YYYY-MM-DD`` in the user's
    zone), summed over its calls."""

    day: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float


async def record_usage(db: Database, run_id: str | None, call: CallUsage) -> None:
    """Append one model call's usage (joins the caller's transaction, if any)."""
    await db.execute(*usage_statement(run_id, call))


def usage_statement(run_id: str | None, call: CallUsage) -> tuple[str, tuple[object, ...]]:
    """The statement and parameters that append one model call's usage, to run with others."""
    return (
        "INSERT INTO usage (created_at, run_id, model, api_model, input_tokens, output_tokens, cache_read_tokens, "
        "cache_write_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            to_iso(call.at),
            run_id,
            call.model,
            call.api_model or call.model,
            call.input_tokens,
            call.output_tokens,
            call.cache_read_tokens,
            call.cache_write_tokens,
            call.cost_usd,
        ),
    )


async def spend_between(db: Reads, start: datetime, end: datetime) -> float:
    """Dollars spent on model calls in ``[start, end)``."""
    row = await db.fetchone(
        "SELECT coalesce(sum(cost_usd), 0.0) AS spent FROM usage WHERE created_at >= ? AND created_at < ?",
        (to_iso(start), to_iso(end)),
    )
    return float(row["spent"]) if row is not None else 0.0


async def usage_by_day(db: Reads, since: datetime | None, tz: tzinfo) -> list[UsageRow]:
    """Usage per day in ``tz`` and per model since ``since`` (all of it when None), oldest day first.

    SQLite knows nothing of time zones, so the days' UTC bounds are computed here and joined in: each day
    reads its own rows through the time index. (A ``created_at >= since`` beside them gave SQLite a second
    lower bound, and it took that one: every day read all history before it, 28 s at 100,000 runs.)
    """
    span = await db.fetchone(
        "SELECT min(created_at) AS first, max(created_at) AS last FROM usage WHERE created_at >= ?",
        ("" if since is None else to_iso(since),),
    )
    if span is None or span["first"] is None:
        return []
    first = datetime.fromisoformat(span["first"]).astimezone(tz).date()
    last = datetime.fromisoformat(span["last"]).astimezone(tz).date()
    days = []
    for offset in range((last - first).days + 1):
        day: date = first + timedelta(days=offset)
        start, end = day_bounds(day, tz)
        if since is not None:
            start = max(start, since)
        days.append([day.isoformat(), to_iso(start), to_iso(end)])
    rows = await db.fetchall(
        """
        SELECT d.value ->> 0 AS day, u.model,
               sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens,
               sum(u.cache_read_tokens) AS cache_read_tokens, sum(u.cache_write_tokens) AS cache_write_tokens,
               sum(u.cost_usd) AS cost_usd
        FROM json_each(:days) AS d
        JOIN usage AS u ON u.created_at >= d.value ->> 1 AND u.created_at < d.value ->> 2
        GROUP BY day, u.model
        ORDER BY day, u.model
        """,
        {"days": json.dumps(days)},
    )
    return [
        UsageRow(
            day=row["day"],
            model=row["model"],
            input_tokens=row["input_tokens"],
            output_tokens=row["output_tokens"],
            cache_read_tokens=row["cache_read_tokens"],
            cache_write_tokens=row["cache_write_tokens"],
            cost_usd=float(row["cost_usd"]),
        )
        for row in rows
    ]
