"""The channel core every channel stands on (bot/channels/): what a person reading the log, or waiting on
a paced reply, would notice of it apart from any one channel."""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import pytest

from bot.channels import Pacer
from bot.channels.storing import StoreOutage


async def test_a_store_outage_is_said_at_each_failure_with_backoff_and_once_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waits: list[float] = []

    async def pause(seconds: float) -> None:
        waits.append(seconds)

    caplog.set_level(logging.INFO)
    storing = StoreOutage("matrix", pause)
    full = sqlite3.OperationalError("database or disk is full")
    await storing.failed("event $1", full, "the homeserver keeps it")
    await storing.failed("event $1", full, "the homeserver keeps it")
    storing.stored()
    storing.stored()  # a success after a success says nothing

    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert lines[:2] == [
        "matrix: could not store event $1 (OperationalError: database or disk is full); "
        f"the homeserver keeps it, trying again in {wait:.1f}s"
        for wait in waits
    ]
    assert waits[0] >= 1.0 and waits[1] > waits[0]  # backing off, not hammering a full disk
    assert len(lines) == 3 and lines[2].startswith("matrix: the store usable again after 2 failure(s)")


async def test_a_pace_of_one_every_zero_seconds_holds_nothing_back() -> None:
    pacer = Pacer(0.0)
    for _ in range(100):
        await asyncio.wait_for(pacer.wait(42), 1)


def test_a_pace_that_lets_nothing_through_is_refused_in_words() -> None:
    with pytest.raises(ValueError, match="a pace of 0 message"):
        Pacer(most=0)
