"""The review page served for real (uvicorn on 127.0.0.1, a free port) over the test's app, and a
real headless Chromium driven by Playwright to visit it."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass

import pytest
from playwright.async_api import Browser, async_playwright

from bot.app import App
from bot.web import Answers, ReviewServer, review_page, review_token

CHROMIUM = "/usr/bin/chromium"


@dataclass(frozen=True)
class Served:
    """The page's base address and token."""

    base: str
    token: str

    @property
    def url(self) -> str:
        """The address a user is given: token included."""
        return f"{self.base}/?token={self.token}"


class FakeTime:
    """A clock the test moves: seconds since the epoch, starting at the real time."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
async def serve_review() -> AsyncIterator[object]:
    """``await serve_review(app)`` starts the page over ``app``'s store (read-only, as `vaultbot
    review` serves it), on ``clock`` if given, able to answer questions with ``answering``; it stops
    after the test."""
    running: list[tuple[asyncio.Event, asyncio.Task[None]]] = []

    async with AsyncExitStack() as pages:

        async def start(app: App, clock: Callable[[], float] = time.time, answering: bool = False) -> Served:
            token = await review_token(app.settings, app.db)
            answers = Answers(app.bus) if answering else None  # as `vaultbot run` serves it, beside the bot
            page = await pages.enter_async_context(
                review_page(app.settings, token, listen="127.0.0.1", clock=clock, answers=answers)
            )
            server = ReviewServer(page, "127.0.0.1", 0)
            stop = asyncio.Event()
            running.append((stop, asyncio.create_task(server.serve(stop))))
            return Served(f"http://127.0.0.1:{server.port}", token)

        yield start
        for stop, task in running:
            stop.set()
            await asyncio.wait_for(task, timeout=10)


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless. Missing Chromium fails the test: these tests never skip."""
    path = shutil.which("chromium") or CHROMIUM
    if not shutil.which(path):
        pytest.fail(
            "Chromium is not installed, and the review page's browser tests need it: "
            "run `apt-get install -y chromium` (scripts/test does this)."
        )
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            await launched.close()
