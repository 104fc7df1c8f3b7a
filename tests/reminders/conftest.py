"""An app on a hand-set clock in Europe/Berlin, and the scheduling tools of one conversation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.app import App
from bot.clock import Clock
from bot.tools import ToolContext
from tests.conftest import make_settings

BERLIN = ZoneInfo("Europe/Berlin")


class Dial:
    """A clock the test moves by hand."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


@pytest.fixture
def dial() -> Dial:
    return Dial(datetime(2026, 11, 23, 8, 0, tzinfo=UTC))  # 09:00 in Berlin


@pytest.fixture
async def open_app(tmp_path: Path, dial: Dial) -> AsyncIterator[Callable[..., Awaitable[App]]]:
    opened: list[App] = []

    async def factory(**overrides: Any) -> App:
        settings = make_settings(tmp_path, timezone="Europe/Berlin", **overrides)
        app = await App.open(settings, clock=Clock(BERLIN, dial))
        opened.append(app)
        return app

    yield factory
    for app in opened:
        await app.close()


@pytest.fixture
async def app(open_app: Callable[..., Awaitable[App]]) -> App:
    return await open_app(reminders={"max_pending": 3})


def context_of(user: str, inbound: str = "in-1") -> ToolContext:
    """The context a run for ``user`` on the terminal gets (the recipient is the run's)."""
    return ToolContext(
        conversation=f"terminal:{user}", channel="terminal", recipient=user, run_id=f"run-{inbound}", inbound_id=inbound
    )
