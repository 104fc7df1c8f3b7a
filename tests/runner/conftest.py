"""Fixtures for whole turns on Claude: the real ``anthropic`` SDK talking HTTP to the fake
Messages API on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.fakes.anthropic_server import FakeAnthropic

AppFactory = Callable[..., Awaitable[App]]


@pytest.fixture
def on_claude(make_app: AppFactory, fake_anthropic: FakeAnthropic) -> Callable[..., Awaitable[App]]:
    """Builds an app whose model is the fake API; keyword arguments add model settings."""

    async def build(**model: Any) -> App:
        return await make_app(
            anthropic_api_key="sk-ant-test-secret",
            anthropic_base_url=fake_anthropic.base_url,
            model={"name": "claude-test", "sdk_max_retries": 0, **model},
        )

    return build


@pytest.fixture
async def app(on_claude: Callable[..., Awaitable[App]]) -> App:
    return await on_claude()


async def send(app: App, text: str, conversation: str = "terminal:ann") -> InboundMessage:
    """Publish ``text`` as Ann's message, as the terminal channel would."""
    message = InboundMessage(channel="terminal", conversation=conversation, sender=Sender(id="ann"), text=text)
    await app.bus.publish(INBOUND, message, conversation=conversation)
    return message


def said(message: dict[str, Any]) -> str:
    """A message's text, whether sent as a string or as text blocks."""
    content = message["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
