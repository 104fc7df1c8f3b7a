"""Usage per model call on a real SQLite file: per day in the user's zone, today's spend, a run's cost."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.db import Database
from bot.store import CallUsage, Store, UsageRow

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    db = await Database.open(tmp_path / "store.db")
    yield Store(db)
    await db.close()


def call(at: datetime, model: str = "claude-sonnet-5", cost: float = 0.01, tokens: int = 100) -> CallUsage:
    return CallUsage(
        at=at,
        model=model,
        input_tokens=tokens,
        output_tokens=tokens // 2,
        cache_read_tokens=tokens * 3,
        cache_write_tokens=tokens * 2,
        cost_usd=cost,
    )


async def test_usage_is_summed_per_day_in_the_users_zone_and_per_model(store: Store) -> None:
    # 23:30 UTC on 1 March is already 2 March in Berlin (UTC+1).
    await store.record_usage("r1", call(datetime(2026, 3, 1, 12, 0, tzinfo=UTC), cost=0.25))
    await store.record_usage("r1", call(datetime(2026, 3, 1, 23, 30, tzinfo=UTC), cost=0.5))
    await store.record_usage("r2", call(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), cost=1.0))
    await store.record_usage("r2", call(datetime(2026, 3, 2, 9, 1, tzinfo=UTC), model="claude-haiku-4-5", cost=0.1))

    rows = await store.usage_by_day(None, BERLIN)
    assert rows == [
        UsageRow("2026-03-01", "claude-sonnet-5", 100, 50, 300, 200, 0.25),
        UsageRow("2026-03-02", "claude-haiku-4-5", 100, 50, 300, 200, 0.1),
        UsageRow("2026-03-02", "claude-sonnet-5", 200, 100, 600, 400, 1.5),
    ]
    in_utc = await store.usage_by_day(None, UTC)
    assert [(r.day, r.model, r.cost_usd) for r in in_utc][:1] == [("2026-03-01", "claude-sonnet-5", 0.75)]
    since = await store.usage_by_day(datetime(2026, 3, 2, 0, 0, tzinfo=UTC), BERLIN)
    assert sum(r.cost_usd for r in since) == pytest.approx(1.1)


async def test_spend_today_follows_the_users_midnight(store: Store) -> None:
    await store.record_usage("r1", call(datetime(2026, 3, 1, 22, 59, tzinfo=UTC), cost=2.0))  # 23:59 Berlin
    await store.record_usage("r1", call(datetime(2026, 3, 1, 23, 0, tzinfo=UTC), cost=3.0))  # 00:00 Berlin
    assert await store.spend_today(BERLIN, now=datetime(2026, 3, 1, 22, 59, 30, tzinfo=UTC)) == 2.0
    assert await store.spend_today(BERLIN, now=datetime(2026, 3, 2, 8, 0, tzinfo=UTC)) == 3.0
    assert await store.spend_today(UTC, now=datetime(2026, 3, 1, 23, 30, tzinfo=UTC)) == 5.0


async def test_a_run_shows_what_its_model_calls_cost(store: Store) -> None:
    await store.start_run("r1", conversation="c", inbound_id="in-1", model="claude-sonnet-5", mode="assistant")
    for cost in (0.002, 0.003):
        await store.add_step(
            "r1",
            kind="model",
            name="claude-sonnet-5",
            input={},
            output={},
            is_error=False,
            duration_ms=1.0,
            usage={"input_tokens": 1},
            call=call(datetime.now(UTC), cost=cost),
        )
    await store.start_run("r2", conversation="c", inbound_id="in-2", model="/status", mode="command")
    runs = {run["id"]: run for run in await store.list_runs()}
    assert runs["r1"]["cost_usd"] == pytest.approx(0.005)
    assert runs["r2"]["cost_usd"] == 0.0
    shown = await store.get_run("r1")
    assert shown is not None and shown["cost_usd"] == pytest.approx(0.005) and len(shown["steps"]) == 2
    assert await store.models_used() == [("claude-sonnet-5", "claude-sonnet-5")]


@pytest.mark.parametrize(
    ("day", "last_minute", "next_day_first_minute"),
    [
        # Clocks go forward on 29 March 2026: a 23-hour day ending at 22:00 UTC.
        ("2026-03-29", datetime(2026, 3, 29, 21, 59, tzinfo=UTC), datetime(2026, 3, 29, 22, 0, tzinfo=UTC)),
        # Clocks go back on 25 October 2026: a 25-hour day ending at 23:00 UTC.
        ("2026-10-25", datetime(2026, 10, 25, 22, 59, tzinfo=UTC), datetime(2026, 10, 25, 23, 0, tzinfo=UTC)),
    ],
)
async def test_days_are_23_or_25_hours_long_across_a_dst_change(
    store: Store, day: str, last_minute: datetime, next_day_first_minute: datetime
) -> None:
    await store.record_usage("r1", call(last_minute, cost=1.0))
    await store.record_usage("r1", call(next_day_first_minute, cost=2.0))
    rows = await store.usage_by_day(None, BERLIN)
    assert [(r.day, r.cost_usd) for r in rows][0] == (day, 1.0)
    assert sum(r.cost_usd for r in rows) == 3.0
