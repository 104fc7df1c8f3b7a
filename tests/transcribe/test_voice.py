"""Recordings become words on the runner side: the real app, bus, vault and SQLite, and the real
transcription client over HTTP to the fake API on 127.0.0.1, with its faults."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.app import App
from tests.channels.telegram_harness import free_port
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.transcription_server import KEY, FakeTranscription
from tests.helpers import outbox, run_inbox
from tests.transcribe.conftest import VoiceApp, send_recording


def inbox_note(app: App) -> str:
    [note] = list((app.notes.root / "Inbox").glob("*.md"))
    return note.read_text(encoding="utf-8")


async def notices(app: App) -> list[str]:
    return [m.text for m in await outbox(app) if m.kind == "notice"]


async def test_capture_mode_files_the_transcript_with_the_recording_linked(
    voice_app: VoiceApp, fake_transcription: FakeTranscription
) -> None:
    app = await voice_app()
    await send_recording(app, b"OggS-voice-bytes", name="voice 7.ogg")
    await run_inbox(app)
    note = inbox_note(app)
    assert "![[Attachments/voice 7.ogg]]" in note
    assert "Buy oat milk and call the plumber about the tap." in note and "voice note" in note
    # Named by what was said, not by where the audio was saved.
    assert (app.notes.root / "Inbox" / "Buy oat milk and call the plumber about the tap.md").is_file()
    [heard] = fake_transcription.transcriptions()
    assert heard.authorization == f"Bearer {KEY}" and heard.fields == {"model": "whisper-1"}
    assert (heard.filename, heard.content_type, heard.audio) == ("voice 7.ogg", "audio/ogg", b"OggS-voice-bytes")
    assert await notices(app) == []


@pytest.mark.parametrize("fault", ["500", "garbage", "429"])
async def test_failures_that_may_pass_are_retried_until_the_transcript_comes(
    voice_app: VoiceApp, fake_transcription: FakeTranscription, fault: str
) -> None:
    if fault == "garbage":
        fake_transcription.garbage(2)
    else:  # an hour's Retry-After is capped at backoff_max_seconds: the test would time out otherwise
        fake_transcription.fail(2, int(fault), retry_after=3600 if fault == "429" else None)
    app = await voice_app()
    await send_recording(app)
    await run_inbox(app)
    assert len(fake_transcription.transcriptions()) == 3
    assert "call the plumber" in inbox_note(app)
    assert await notices(app) == []


async def test_a_recording_failing_every_attempt_is_filed_without_a_transcript_and_the_user_told_once(
    voice_app: VoiceApp, fake_transcription: FakeTranscription
) -> None:
    fake_transcription.fail(3, 503)
    app = await voice_app(attempts=3)
    await send_recording(app)
    await run_inbox(app)
    assert len(fake_transcription.transcriptions()) == 3
    note = inbox_note(app)
    assert "![[Attachments/voice 7.ogg]]" in note and "without a transcript" in note
    [told] = await notices(app)
    assert "could not transcribe your voice note" in told and "HTTP 503" in told and "3 times" in told
    assert "\n" not in told
    [logged] = [e for e in await app.store.list_interactions() if e["category"] == "transcription"]
    assert logged["summary"].startswith("Voice note Attachments/voice 7.ogg filed without a transcript")
    assert (app.notes.root / "Attachments" / "voice 7.ogg").read_bytes() == b"OggS-voice"


async def test_a_retry_after_is_waited_for(voice_app: VoiceApp, fake_transcription: FakeTranscription) -> None:
    fake_transcription.fail(1, 429, retry_after=1)
    app = await voice_app(backoff_max_seconds=5)
    await send_recording(app)
    await run_inbox(app)
    first, second = fake_transcription.transcriptions()
    assert second.at - first.at >= 1.0
    assert "call the plumber" in inbox_note(app)


async def test_a_service_that_does_not_answer_in_time_is_given_up_on(
    voice_app: VoiceApp, fake_transcription: FakeTranscription
) -> None:
    fake_transcription.hang()
    app = await voice_app(timeout=0.2, attempts=2)
    await send_recording(app)
    await run_inbox(app)
    fake_transcription.release()
    assert len(fake_transcription.transcriptions()) == 2
    [told] = await notices(app)
    assert "did not answer within 0.2 s, 2 times" in told
    assert "without a transcript" in inbox_note(app)


async def test_a_service_that_cannot_be_reached_is_retried_then_given_up_on(voice_app: VoiceApp) -> None:
    app = await voice_app(base_url=f"http://127.0.0.1:{free_port()}/v1")
    await send_recording(app)
    await run_inbox(app)
    [told] = await notices(app)
    assert "could not be reached" in told and "3 times" in told
    assert "![[Attachments/voice 7.ogg]]" in inbox_note(app)


@pytest.mark.parametrize(("status", "says"), [(401, "refused the API key"), (400, "refused the recording (HTTP 400")])
async def test_a_refusal_is_not_retried_and_told_in_one_line(
    voice_app: VoiceApp, fake_transcription: FakeTranscription, status: int, says: str
) -> None:
    if status == 401:
        fake_transcription.key = "sk-another-key"
    else:
        fake_transcription.fail(1, 400, message="Invalid file format.")
    app = await voice_app()
    await send_recording(app)
    await run_inbox(app)
    assert len(fake_transcription.transcriptions()) == 1
    [told] = await notices(app)
    assert says in told and "\n" not in told
    assert "without a transcript" in inbox_note(app)


@pytest.mark.parametrize(
    ("limit", "duration", "says"),
    [({"max_seconds": 60}, 61, "1:01 min long, over the 1:00 min limit"), ({"max_bytes": 5}, 4, "over the 0.0 MB")],
)
async def test_a_recording_over_a_limit_is_kept_and_filed_and_the_user_told(
    voice_app: VoiceApp, fake_transcription: FakeTranscription, limit: dict[str, int], duration: int, says: str
) -> None:
    app = await voice_app(**limit)
    await send_recording(app, b"OggS-voice", duration=duration)
    await run_inbox(app)
    assert fake_transcription.transcriptions() == []
    [told] = await notices(app)
    assert says in told and "Attachments/voice 7.ogg" in told
    assert "![[Attachments/voice 7.ogg]]" in inbox_note(app)
    assert (app.notes.root / "Attachments" / "voice 7.ogg").read_bytes() == b"OggS-voice"


async def test_a_rerun_reuses_the_transcript_instead_of_asking_again(
    voice_app: VoiceApp, fake_transcription: FakeTranscription, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.status(500), api.text("Got it: oat milk and the plumber."))
    claude = {"anthropic_api_key": "sk-ant-test", "anthropic_base_url": fake_anthropic.base_url}
    app = await voice_app(app={**claude, "model": {"name": "claude-test", "sdk_max_retries": 0}})
    await send_recording(app)
    await run_inbox(app)
    assert len(fake_anthropic.requests) == 2  # the first run failed on the model, the bus re-ran it
    assert len(fake_transcription.transcriptions()) == 1
    spoken = fake_anthropic.requests[1].body["messages"][-1]["content"]
    assert "[Transcript of my voice note, my own words, spoken:]\nBuy oat milk" in str(spoken)
    assert [m.text for m in await outbox(app) if m.kind == "reply"] == ["Got it: oat milk and the plumber."]


async def test_a_rerun_after_a_failed_transcription_neither_asks_again_nor_tells_twice(
    voice_app: VoiceApp, fake_transcription: FakeTranscription, fake_anthropic: FakeAnthropic
) -> None:
    fake_transcription.fail(3, 500)
    fake_anthropic.enqueue(api.status(500), api.text("Noted, without the words."))
    claude = {"anthropic_api_key": "sk-ant-test", "anthropic_base_url": fake_anthropic.base_url}
    app = await voice_app(app={**claude, "model": {"name": "claude-test", "sdk_max_retries": 0}})
    await send_recording(app)
    await run_inbox(app)
    assert len(fake_anthropic.requests) == 2 and len(fake_transcription.transcriptions()) == 3
    assert len([t for t in await notices(app) if "could not transcribe" in t]) == 1
    assert [e["category"] for e in await app.store.list_interactions()].count("transcription") == 1
    [last, first] = await app.store.list_runs(limit=2)
    steps = [s for run in (first, last) for s in (await app.store.get_run(run["id"]) or {})["steps"]]
    assert [s["output"]["reused"] for s in steps if s["name"] == "transcription"] == [False, True]


@pytest.mark.parametrize(
    ("saved", "sent"), [("memo.opus", "memo.ogg"), ("memo.oga", "memo.ogg"), ("memo.m4a", "memo.m4a")]
)
async def test_a_recording_is_sent_under_a_name_the_service_takes(
    voice_app: VoiceApp, fake_transcription: FakeTranscription, saved: str, sent: str
) -> None:
    app = await voice_app()
    await send_recording(app, name=saved, kind="audio")
    await run_inbox(app)
    [heard] = fake_transcription.transcriptions()
    assert heard.filename == sent
    assert f"![[Attachments/{saved}]]" in inbox_note(app)  # the file in the vault keeps its name


async def test_a_recording_without_speech_says_so(voice_app: VoiceApp, fake_transcription: FakeTranscription) -> None:
    fake_transcription.text = ""
    app = await voice_app()
    await send_recording(app)
    await run_inbox(app)
    assert "This voice note was transcribed, but no speech was found in it." in inbox_note(app)
    assert await notices(app) == []


async def test_the_key_never_reaches_logs_the_store_the_vault_or_the_user(
    voice_app: VoiceApp, fake_transcription: FakeTranscription, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_transcription.key = "sk-the-right-one"  # ours is refused, and the 401 quotes it back
    app = await voice_app()
    await send_recording(app)
    await run_inbox(app)
    [heard] = fake_transcription.transcriptions()
    assert heard.authorization == f"Bearer {KEY}"
    [told] = await notices(app)
    assert "refused the API key" in told
    assert "[the API key]" in told  # the service's message is kept, with the key taken out
    assert KEY not in caplog.text
    # The database (runs, steps, interactions, outbox, transcripts), its WAL, and the vault.
    await app.db.execute("PRAGMA wal_checkpoint")
    leaking = [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaking == []
