"""Voice notes, audio files and video notes over Telegram: the real python-telegram-bot against the
fake Bot API, the real transcription client against the fake speech-to-text API, and the real
``anthropic`` SDK against the fake Messages API, all on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND
from tests.channels.telegram_harness import ANN, Serve, Served, echo
from tests.fakes import anthropic_server as api
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.transcription_server import KEY, FakeTranscription

SPOKEN = "Buy oat milk and call the plumber about the tap."


async def serve_voice(
    serve: Serve,
    make_app: Callable[..., Awaitable[App]],
    fake: FakeTelegram,
    speech: FakeTranscription,
    model: Any = None,
    *,
    app: dict[str, Any] | None = None,
    **transcribe: Any,
) -> Served:
    """The channel and a runner worker on an app that transcribes through ``speech``."""
    telegram = {"token": tg.DEFAULT_TOKEN, "allowed_users": [ANN], "base_url": fake.base_url}
    telegram["base_file_url"] = fake.base_file_url
    settings = {"base_url": speech.base_url, "api_key": KEY, "backoff_seconds": 0.01, "backoff_max_seconds": 0.05}
    opened = await make_app(model, telegram=telegram, transcribe={**settings, **transcribe}, **(app or {}))
    return await serve(app=opened)


def push_voice(fake: FakeTelegram, message_id: int = 31, duration: int = 4) -> int:
    fake.add_file(f"vo{message_id}", b"OggS-voice", file_path=f"voice/file_{message_id}.oga")
    return fake.push_update(tg.voice_update(f"vo{message_id}", duration=duration, file_size=10, message_id=message_id))


async def test_a_voice_note_becomes_a_transcribed_note_whose_words_the_model_reads(
    serve: Serve,
    make_app: Callable[..., Awaitable[App]],
    fake: FakeTelegram,
    fake_transcription: FakeTranscription,
    fake_anthropic: FakeAnthropic,
) -> None:
    def file_it(body: dict[str, Any]) -> api.Canned:
        said = body["messages"][-1]["content"]
        if isinstance(said, str):  # the user's turn: the model files what it read
            return api.tool_use(("vault_write", {"folder": "Notes", "title": "Voice memo", "content": said}))
        return api.text("Filed it under Notes/Voice memo.")

    fake_anthropic.handler = file_it
    claude = {"anthropic_api_key": "sk-ant-test", "anthropic_base_url": fake_anthropic.base_url}
    served = await serve_voice(
        serve, make_app, fake, fake_transcription, app={**claude, "model": {"name": "claude-test"}}
    )
    push_voice(fake)
    await fake.await_for(lambda f: f.sent_texts == ["Filed it under Notes/Voice memo."])
    read = fake_anthropic.requests[0].body["messages"][-1]["content"]
    assert "[Voice saved in the vault: ![[Attachments/voice 31.ogg]]]" in read
    assert f"[Transcript of my voice note, my own words, spoken:]\n{SPOKEN}" in read
    note = (served.app.notes.root / "Notes" / "Voice memo.md").read_text(encoding="utf-8")
    assert SPOKEN in note and "![[Attachments/voice 31.ogg]]" in note
    [heard] = fake_transcription.transcriptions()
    assert heard.audio == b"OggS-voice" and heard.filename == "voice 31.ogg"


async def test_a_voice_note_failing_more_often_than_retried_is_still_filed_and_the_user_told_once(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_transcription: FakeTranscription
) -> None:
    fake_transcription.fail(3, 500)
    served = await serve_voice(serve, make_app, fake, fake_transcription, attempts=3)  # capture mode
    push_voice(fake)
    await fake.await_for(lambda f: len(f.sent) == 2)
    assert len(fake_transcription.transcriptions()) == 3
    told = [t for t in fake.sent_texts if "could not transcribe" in t]
    assert len(told) == 1 and "\n" not in told[0] and "Attachments/voice 31.ogg" in told[0]
    assert any(t.startswith("Saved to Inbox/") for t in fake.sent_texts)
    [note] = list((served.app.notes.root / "Inbox").glob("*.md"))
    assert "![[Attachments/voice 31.ogg]]" in note.read_text() and "without a transcript" in note.read_text()
    assert (served.app.notes.root / "Attachments" / "voice 31.ogg").read_bytes() == b"OggS-voice"


async def test_receiving_and_confirming_updates_never_wait_on_a_hung_transcription(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_transcription: FakeTranscription
) -> None:
    fake_transcription.hang()
    served = await serve_voice(serve, make_app, fake, fake_transcription, ScriptedModel(echo))
    push_voice(fake)
    await fake_transcription.await_for(lambda f: len(f.transcriptions()) == 1)  # now hanging
    later = fake.push_update(tg.text_update("and also eggs", message_id=32))
    # The next update is taken, stored and confirmed to Telegram while the transcription still hangs.
    await fake.await_for(lambda f: f.confirmed_offset > later)
    assert (await served.app.bus.counts(INBOUND)).get("pending") == 1
    assert fake.sent == [] and len(fake_transcription.transcriptions()) == 1
    fake_transcription.release()
    await fake.await_for(lambda f: len(f.sent) == 2)
    # Answered in the order they were sent: the voice note (with its words) first.
    assert SPOKEN in fake.sent_texts[0] and fake.sent_texts[1] == "You said: and also eggs"


@pytest.mark.parametrize("kind", ["audio", "video_note"])
async def test_audio_files_and_video_notes_are_transcribed_too(
    serve: Serve,
    make_app: Callable[..., Awaitable[App]],
    fake: FakeTelegram,
    fake_transcription: FakeTranscription,
    kind: str,
) -> None:
    served = await serve_voice(serve, make_app, fake, fake_transcription)  # capture mode
    if kind == "audio":
        fake.add_file("au1", b"ID3-audio", file_path="music/file_3.mp3")
        fake.push_update(tg.audio_update("au1", 30, 9, "standup.mp3", message_id=40))
        saved, mime = "standup.mp3", "audio/mpeg"
    else:
        fake.add_file("vn1", b"mp4-video-note", file_path="video_notes/file_4.mp4")
        fake.push_update(tg.video_note_update("vn1", 12, 14, message_id=41))
        saved, mime = "video note 41.mp4", "video/mp4"
    await fake.await_for(lambda f: len(f.sent) == 1)
    [heard] = fake_transcription.transcriptions()
    assert (heard.filename, heard.content_type) == (saved, mime)
    [note] = list((served.app.notes.root / "Inbox").glob("*.md"))
    assert SPOKEN in note.read_text() and f"![[Attachments/{saved}]]" in note.read_text()


async def test_a_voice_note_over_the_duration_limit_is_kept_filed_and_the_user_told(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_transcription: FakeTranscription
) -> None:
    served = await serve_voice(serve, make_app, fake, fake_transcription, max_seconds=60)
    push_voice(fake, duration=61)
    await fake.await_for(lambda f: len(f.sent) == 2)
    assert fake_transcription.transcriptions() == []
    [told] = [t for t in fake.sent_texts if "could not transcribe" in t]
    assert "1:01 min long, over the 1:00 min limit" in told
    assert (served.app.notes.root / "Attachments" / "voice 31.ogg").read_bytes() == b"OggS-voice"
    [note] = list((served.app.notes.root / "Inbox").glob("*.md"))
    assert "![[Attachments/voice 31.ogg]]" in note.read_text()


async def test_the_transcription_shows_in_the_runs_audit_trail(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_transcription: FakeTranscription
) -> None:
    served = await serve_voice(serve, make_app, fake, fake_transcription)
    push_voice(fake)
    await fake.await_for(lambda f: len(f.sent) == 1)
    [run] = await served.app.store.list_runs(limit=1)
    steps = (await served.app.store.get_run(run["id"]) or {})["steps"]
    [step] = [s for s in steps if s["name"] == "transcription"]
    assert step["input"]["audio"] == "Attachments/voice 31.ogg" and step["input"]["duration"] == 4
    assert step["output"] | {"detail": ""} == {
        "status": "transcribed",
        "chars": len(SPOKEN),
        "detail": "",
        "attempts": 1,
        "reused": False,
    }
    assert KEY not in json.dumps(steps)
