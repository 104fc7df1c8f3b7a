"""`vaultbot run` killed with SIGKILL while a voice note is being transcribed (or just after), then
restarted: the voice note is filed once, with its transcript, and the user answered once. Real
processes, real ptb, fake Bot, speech-to-text and Messages APIs."""

from __future__ import annotations

import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.channels.telegram_harness import RunVaultbot, bus_statuses, stop, wait_until
from tests.fakes import anthropic_server as api
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.transcription_server import KEY, FakeTranscription
from tests.helpers import SEVERAL_PROCESSES

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test


def start(
    run: RunVaultbot, telegram: FakeTelegram, speech: FakeTranscription, anthropic: FakeAnthropic
) -> subprocess.Popen[str]:
    return run(
        VAULTBOT_TELEGRAM__TOKEN=tg.DEFAULT_TOKEN,
        VAULTBOT_TELEGRAM__ALLOWED_USERS="[42]",
        VAULTBOT_TELEGRAM__BASE_URL=telegram.base_url,
        VAULTBOT_TELEGRAM__BASE_FILE_URL=telegram.base_file_url,
        VAULTBOT_TRANSCRIBE__BASE_URL=speech.base_url,
        VAULTBOT_TRANSCRIBE__API_KEY=KEY,
        ANTHROPIC_API_KEY="sk-ant-crash-test",
        ANTHROPIC_BASE_URL=anthropic.base_url,
        VAULTBOT_MODEL__SDK_MAX_RETRIES="0",
        VAULTBOT_BUS__LEASE_SECONDS="1",
    )


@pytest.mark.parametrize("point", ["during the transcription", "after the transcript, before the model answers"])
def test_a_voice_note_interrupted_by_sigkill_is_filed_once_after_restart(
    tmp_path: Path,
    fake: FakeTelegram,
    fake_transcription: FakeTranscription,
    fake_anthropic: FakeAnthropic,
    vaultbot_run: RunVaultbot,
    point: str,
) -> None:
    waiting, release = threading.Event(), threading.Event()

    def file_it(body: dict[str, Any]) -> api.Canned:
        said = body["messages"][-1]["content"]
        if not isinstance(said, str):
            return api.text("Filed as Notes/Voice memo.md.")  # named: the runner adds no line
        if point.startswith("after") and not release.is_set():
            waiting.set()
            release.wait(timeout=30)  # the first process dies while it waits here
        return api.tool_use(("vault_write", {"folder": "Notes", "title": "Voice memo", "content": said}))

    fake_anthropic.handler = file_it
    if point.startswith("during"):
        fake_transcription.hang()
    fake.add_file("vo1", b"OggS-voice", file_path="voice/file_1.oga")
    fake.push_update(tg.voice_update("vo1", duration=4, file_size=10, message_id=31))

    first = start(vaultbot_run, fake, fake_transcription, fake_anthropic)
    if point.startswith("during"):
        wait_until(lambda: len(fake_transcription.transcriptions()) == 1, "the transcription started", first)
    else:
        wait_until(waiting.is_set, "the model was asked", first)
    stop(first, signal.SIGKILL)
    fake_transcription.release()
    release.set()

    second = start(vaultbot_run, fake, fake_transcription, fake_anthropic)
    wait_until(lambda: bus_statuses(tmp_path / "data" / "vaultbot.db", "inbound") == ["done"], "filed", second)
    wait_until(lambda: len(fake.sent) >= 1, "the reply was sent", second)
    errors = stop(second, signal.SIGTERM)
    assert second.returncode == 0, errors
    assert KEY not in errors
    assert fake.sent_texts == ["Filed as Notes/Voice memo.md."]
    [note] = list((tmp_path / "data" / "vault").rglob("*.md"))
    text = note.read_text(encoding="utf-8")
    assert fake_transcription.text in text and "![[Attachments/voice 31.ogg]]" in text
    # Killed mid-request, it asks again; killed after the transcript was kept, it reuses it.
    assert len(fake_transcription.transcriptions()) == (2 if point.startswith("during") else 1)
