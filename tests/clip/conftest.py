"""Fixtures for clip_link: the fake web site, and apps whose model is the fake Messages API (or
capture mode) with links to 127.0.0.1 allowed, as a test needs to reach the site."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.clip import Resolver, resolve
from tests.conftest import make_settings
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.web_server import FakeWeb

ClipApp = Callable[..., Awaitable[App]]


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    with FakeWeb() as server:
        yield server


@pytest.fixture
async def clip_app(tmp_path: Path, fake_anthropic: FakeAnthropic) -> AsyncIterator[ClipApp]:
    """``clip_app(claude=True, resolver=…, vault=…, **clip)``: an app on the fake API (capture mode with
    ``claude=False``) whose clip settings allow private addresses unless ``clip`` says otherwise; ``vault``
    adds to the vault's settings."""
    opened: list[App] = []

    async def open_app(
        *, claude: bool = True, resolver: Resolver = resolve, vault: dict[str, Any] | None = None, **clip: Any
    ) -> App:
        model: dict[str, Any] = {}
        if claude:
            model = {
                "anthropic_api_key": "sk-ant-test",
                "anthropic_base_url": fake_anthropic.base_url,
                "model": {"name": "claude-test", "sdk_max_retries": 0},
            }
        settings = make_settings(tmp_path, clip={"allow_private": True, **clip}, vault=vault or {}, **model)
        app = await App.open(settings, resolver=resolver)
        opened.append(app)
        return app

    yield open_app
    for app in opened:
        await app.close()
