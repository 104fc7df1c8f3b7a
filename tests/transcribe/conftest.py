"""An app whose recordings go to the fake transcription API, and a voice note sent the way a channel
sends one: the recording already kept in the vault, the message on the bus."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, Audio, InboundMessage, Sender
from bot.runner import ModelClient
from tests.fakes.transcription_server import KEY, FakeTranscription

VoiceApp = Callable[..., Awaitable[App]]


@pytest.fixture
def voice_app(make_app: Callable[..., Awaitable[App]], fake_transcription: FakeTranscription) -> VoiceApp:
    """Builds an app (capture mode unless ``model`` or ``app`` settings say otherwise) transcribing
    through the fake, with quick backoff; keyword arguments add transcription settings."""

    async def build(model: ModelClient | None = None, *, app: dict[str, Any] | None = None, **transcribe: Any) -> App:
        settings = {
            "base_url": fake_transcription.base_url,
            "api_key": KEY,
            "backoff_seconds": 0.01,
            "backoff_max_seconds": 0.05,
            **transcribe,
        }
        return await make_app(model, transcribe=settings, **(app or {}))

    return build


async def send_recording(
    app: App, data: bytes = b"OggS-voice", *, name: str = "voice 7.ogg", kind: str = "voice", duration: float = 4
) -> InboundMessage:
    """Keep ``data`` under Attachments/ and publish Ann's message carrying it, as a channel does."""
    path = await asyncio.to_thread(app.notes.save_attachment, "Attachments", name, data)
    message = InboundMessage(
        channel="terminal",
        conversation="terminal:ann",
        sender=Sender(id="ann"),
        text=f"[Voice saved in the vault: ![[{path}]]]",
        audio=Audio(path=path, kind=kind, duration=duration),  # type: ignore[arg-type]
    )
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    return message
