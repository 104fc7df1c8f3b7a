"""Fixtures borrowed for undo's tests: the fake Bot API and the Telegram channel (tests/channels), the
fake web site and clipping apps (tests/clip), an app on the fake Messages API (tests/runner)."""

from tests.channels.conftest import fake, serve
from tests.clip.conftest import clip_app, web
from tests.runner.conftest import on_claude

__all__ = ["clip_app", "fake", "on_claude", "serve", "web"]
