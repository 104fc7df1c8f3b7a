"""Strangers' refusals on the store, as every channel uses them: answered once an hour, counted in
one entry per stranger and hour, the windows kept across a restart, and what is kept bounded by the
strangers of one hour, however long a flood lasts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.db import Database
from bot.store import Refusal, Store, Strangers

START = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)


class Hands:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "store.db")
    yield database
    await database.close()


async def refuse(strangers: Strangers, sender: str, channel: str = "email") -> Refusal:
    return await strangers.refuse(channel=channel, sender=sender, who=f"mail from {sender}", conversation=sender)


async def summaries(db: Database) -> list[str]:
    rows = await db.fetchall("SELECT summary FROM interactions WHERE category = 'access_denied' ORDER BY id")
    return [row["summary"] for row in rows]


async def test_a_stranger_is_answered_again_only_after_an_hour(db: Database) -> None:
    clock = Hands()
    strangers = Strangers(Store(db), now=clock)
    assert await refuse(strangers, "eve@example.com") == Refusal(first=True, messages=1)
    clock.now += timedelta(minutes=59)
    assert await refuse(strangers, "eve@example.com") == Refusal(first=False, messages=2)
    clock.now += timedelta(minutes=2)
    assert await refuse(strangers, "eve@example.com") == Refusal(first=True, messages=1)
    assert await summaries(db) == [
        "Refused mail from eve@example.com: not allowlisted (2 messages within an hour)",
        "Refused mail from eve@example.com: not allowlisted",
    ]


async def test_the_window_outlives_a_restart_and_is_per_channel(tmp_path: Path) -> None:
    clock = Hands()
    db = await Database.open(tmp_path / "store.db")
    try:
        assert (await refuse(Strangers(Store(db), now=clock), "666", channel="telegram")).first
    finally:
        await db.close()
    clock.now += timedelta(minutes=30)
    db = await Database.open(tmp_path / "store.db")
    try:
        strangers = Strangers(Store(db), now=clock)
        assert await refuse(strangers, "666", channel="telegram") == Refusal(first=False, messages=2)
        assert (await refuse(strangers, "666", channel="email")).first  # another channel's 666 is someone else
    finally:
        await db.close()


async def test_a_flood_of_new_strangers_keeps_a_bounded_number_of_rows(db: Database) -> None:
    clock = Hands()
    strangers = Strangers(Store(db), now=clock, most=3)
    answered = []
    for hour in range(5):  # five hours of ten new senders every ten minutes
        for minute in range(0, 60, 10):
            clock.now = START + timedelta(hours=hour, minutes=minute)
            for n in range(10):
                refusal = await refuse(strangers, f"bot{hour}-{minute}-{n}@example.com")
                answered.append(refusal.first)
        kept = await db.fetchone("SELECT count(*) AS n FROM refusals")
        assert kept is not None and kept["n"] <= 3 + 1  # one window's strangers, and the row for the rest
    assert sum(answered) == 5 * 3  # three answered an hour
    logged = await summaries(db)
    assert len(logged) == 5 * (3 + 1)
    assert logged[3] == (
        "Refused 57 messages from more strangers on email: past 3 strangers within an hour, the rest are counted "
        "here and not answered"
    )
