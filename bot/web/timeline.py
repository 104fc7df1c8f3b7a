"""The timeline: the interaction log, newest first, grouped by day, searchable and filtered."""

from __future__ import annotations

from datetime import date, datetime, tzinfo

from starlette.requests import Request
from starlette.responses import Response

from bot.clock import day_bounds
from bot.store import RUN_STATUSES, TimelineFilter
from bot.web.sources import sources

PAGE_SIZE = 50


async def timeline(request: Request) -> Response:
    """One page of the log; ``before`` pages back, the other parameters filter."""
    review = sources(request)
    tz = review.settings.zone
    params = {k: request.query_params.get(k, "").strip() for k in ("q", "category", "conversation", "status")}
    params |= {k: request.query_params.get(k, "").strip() for k in ("since", "until")}
    problems: list[str] = []
    where = TimelineFilter(
        query=params["q"],
        category=params["category"],
        conversation=params["conversation"],
        status=params["status"],
        since=_day(params["since"], "from", problems, tz, end=False),
        until=_day(params["until"], "to", problems, tz, end=True),
        before=_before(request.query_params.get("before"), problems),
    )
    entries, following = ([], None) if problems else await review.reader.timeline(where, limit=PAGE_SIZE)
    data = {
        "filters": params,
        "problems": problems,
        "entries": entries,
        "next_before": following,
        "categories": await review.reader.categories(),
        "conversations": await review.reader.conversations(),
        "statuses": RUN_STATUSES,
    }
    return review.renderer.page(request, "timeline.html", data, status=400 if problems else 200)


def _day(value: str, name: str, problems: list[str], tz: tzinfo, *, end: bool) -> datetime | None:
    """The start (or with ``end``, the end) of the day ``value`` in the user's zone."""
    if not value:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        problems.append(f"“{name}” must be a date like 2026-11-23.")
        return None
    return day_bounds(day, tz)[1 if end else 0]


def _before(value: str | None, problems: list[str]) -> int | None:
    if not value:
        return None
    if not value.isdigit():
        problems.append("“before” must be an entry number.")
        return None
    return int(value)
