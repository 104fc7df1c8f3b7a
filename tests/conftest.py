"""Shared fixtures: every test gets a fresh vault and database under tmp_path, and an
environment with no vaultbot or Anthropic variables, so nothing on the developer's machine leaks in."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.runner import ModelClient
from bot.settings import Settings
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.transcription_server import FakeTranscription
from tests.helpers import OWN_PREFIXES


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith(OWN_PREFIXES):
            monkeypatch.delenv(key)
    # A .env or config/vaultbot.toml in the developer's checkout must not be read.
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def fake_transcription() -> Iterator[FakeTranscription]:
    with FakeTranscription() as fake:
        yield fake


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings on tmp_path with quick retries; ``overrides`` are init values (sections as dicts).

    Search by meaning is off unless a test turns it on (``vault={"search_by_meaning": True}``): the model
    costs every app a background thread embedding its notes, which tests of other things do not need."""
    base: dict[str, Any] = {
        "vault": {"path": tmp_path / "vault", "search_by_meaning": False},
        "store": {"path": tmp_path / "vaultbot.db"},
        "bus": {"backoff_seconds": 0.01, "backoff_max_seconds": 0.05, "max_attempts": 3},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return Settings(_env_file=None, **base)


@pytest.fixture
async def make_app(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[App]]]:
    opened: list[App] = []

    async def factory(client: ModelClient | None = None, **overrides: Any) -> App:
        app = await App.open(make_settings(tmp_path, **overrides), model=client)
        opened.append(app)
        return app

    yield factory
    for app in opened:
        await app.close()
