"""Usage: tokens and cost per day and per model over the last 30 days, as charts (bars in inline
SVG, no script, so the Content-Security-Policy stays strict), today's spend against the budget,
and the share of input read from the prompt cache."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from bot.clock import day_bounds
from bot.store import UsageRow
from bot.web.sources import ReviewSources, sources

DAYS = 30
PALETTE = ["#6d4aff", "#16a394", "#e0823d", "#d14d72", "#4a8fe7", "#8a8f98"]
# The bars' drawing box in SVG user units: a day is STEP wide, the tallest bar HEIGHT high. The SVG
# is stretched to the page's width, so its labels are HTML beside it, at a size that reads on a phone.
STEP, HEIGHT = 10, 100


@dataclass(frozen=True)
class Bar:
    """One model's part of one day's bar."""

    x: float
    y: float
    width: float
    height: float
    fill: str
    label: str


async def usage_page(request: Request) -> Response:
    """The last 30 days of usage in the user's zone."""
    review = sources(request)
    tz = review.settings.zone
    today = datetime.now(tz).date()
    days = [(today - timedelta(days=DAYS - 1 - i)).isoformat() for i in range(DAYS)]
    start, _ = day_bounds(today - timedelta(days=DAYS - 1), tz)
    rows = await review.reader.usage_by_day(start, tz)
    models = sorted({row.model for row in rows})
    colours = {model: PALETTE[i % len(PALETTE)] for i, model in enumerate(models)}
    read = sum(r.cache_read_tokens for r in rows)
    all_input = sum(r.input_tokens + r.cache_read_tokens + r.cache_write_tokens for r in rows)
    data: dict[str, Any] = {
        "days": [days[0], days[-1]],
        "rows": [asdict(row) for row in rows],
        "models": [{"name": m, "colour": colours[m]} for m in models],
        "spent_today": await review.reader.spend_today(tz),
        "budget": await _budget(review),
        "cache_read_share": read / all_input if all_input else None,
        "total_cost": sum(r.cost_usd for r in rows),
        "total_tokens": sum(_tokens(r) for r in rows),
    }
    if request.query_params.get("format") != "json":
        data["cost_chart"] = _chart(rows, days, colours, lambda r: r.cost_usd, money=True)
        data["token_chart"] = _chart(rows, days, colours, _tokens, money=False)
    return review.renderer.page(request, "usage.html", data)


def _tokens(row: UsageRow) -> int:
    return row.input_tokens + row.output_tokens + row.cache_read_tokens + row.cache_write_tokens


async def _budget(review: ReviewSources) -> float | None:
    """The daily budget the bot runs with, as it recorded it; this process's own setting until a
    bot has run."""
    recorded = await review.reader.bot_config()
    if recorded is None:
        return review.settings.budget.daily_usd
    budget = recorded[0].get("budget_daily_usd")
    return float(budget) if isinstance(budget, int | float) else None


def _chart(
    rows: list[UsageRow], days: list[str], colours: dict[str, str], value: Any, *, money: bool
) -> dict[str, Any]:
    """Stacked bars, one per day, one colour per model, with a labelled scale."""
    per_day: dict[str, list[UsageRow]] = {}
    for row in rows:
        per_day.setdefault(row.day, []).append(row)
    top = max((sum(value(r) for r in per_day.get(day, [])) for day in days), default=0) or 1
    bars: list[Bar] = []
    for i, day in enumerate(days):
        y = HEIGHT
        for row in per_day.get(day, []):
            height = value(row) / top * HEIGHT
            y -= height
            shown = f"${value(row):,.4f}" if money else f"{value(row):,} tokens"
            bars.append(Bar(i * STEP + 1, y, STEP - 2, height, colours[row.model], f"{day} {row.model}: {shown}"))
    fmt = (lambda v: f"${v:,.2f}") if money else (lambda v: f"{v:,.0f}")
    return {
        "width": STEP * len(days),
        "height": HEIGHT,
        "bars": bars,
        # Top, middle and bottom of the scale, as the gridlines run.
        "ticks": [{"y": HEIGHT - f * HEIGHT, "label": fmt(top * f)} for f in (1, 0.5, 0)],
        # One label a week, under its day; the other days' places stay empty.
        "labels": [day[5:] if i % 7 == 2 else "" for i, day in enumerate(days)],
    }
