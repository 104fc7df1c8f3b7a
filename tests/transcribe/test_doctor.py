"""`vaultbot doctor` checks the transcription endpoint with one free request, and never prints the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.cli.doctor import Check, diagnose
from tests.channels.telegram_harness import free_port
from tests.conftest import make_settings
from tests.fakes.transcription_server import KEY, FakeTranscription
from tests.test_cli import vaultbot


async def transcription_check(tmp_path: Path, **transcribe: Any) -> Check:
    [check] = [c for c in await diagnose(make_settings(tmp_path, transcribe=transcribe)) if c.name == "transcription"]
    return check


async def test_a_working_endpoint_is_reported_with_its_model_and_limits(
    tmp_path: Path, fake_transcription: FakeTranscription
) -> None:
    check = await transcription_check(tmp_path, base_url=fake_transcription.base_url, api_key=KEY)
    assert check.ok and "whisper-1" in check.detail and "key accepted" in check.detail and "1200 s" in check.detail
    [heard] = fake_transcription.requests
    assert (heard.method, heard.path) == ("GET", "/v1/models")  # no audio sent, nothing billed


@pytest.mark.parametrize(
    ("setup", "says"),
    [
        ("wrong key", "refused the API key (HTTP 401"),
        ("unknown model", "does not offer whisper-9"),
        ("nothing listening", "could not be reached"),
    ],
)
async def test_a_broken_endpoint_fails_the_check_and_says_why(
    tmp_path: Path, fake_transcription: FakeTranscription, setup: str, says: str
) -> None:
    settings: dict[str, Any] = {"base_url": fake_transcription.base_url, "api_key": KEY}
    if setup == "wrong key":
        fake_transcription.key = "sk-the-right-one"
    if setup == "unknown model":
        settings["model"] = "whisper-9"
    if setup == "nothing listening":
        settings["base_url"] = f"http://127.0.0.1:{free_port()}/v1"
    check = await transcription_check(tmp_path, **settings)
    assert not check.ok and says in check.detail and KEY not in check.detail


async def test_a_server_without_a_model_list_is_reported_reachable(
    tmp_path: Path, fake_transcription: FakeTranscription
) -> None:
    fake_transcription.models = None  # e.g. a local whisper server: GET /v1/models is a 404, no key needed
    fake_transcription.key = None
    check = await transcription_check(tmp_path, base_url=fake_transcription.base_url)
    assert check.ok and "reachable, lists no models (no key)" in check.detail


async def test_unset_transcription_is_reported_as_off(tmp_path: Path) -> None:
    check = await transcription_check(tmp_path)
    assert check.ok and check.detail.startswith("off: voice notes are filed without a transcript")


def test_doctor_on_the_command_line_never_prints_the_key(tmp_path: Path, fake_transcription: FakeTranscription) -> None:
    fake_transcription.key = "sk-the-right-one"  # the 401 quotes the key it was sent
    done = vaultbot(
        tmp_path,
        "--verbose",
        "doctor",
        env={"VAULTBOT_TRANSCRIBE__BASE_URL": fake_transcription.base_url, "VAULTBOT_TRANSCRIBE__API_KEY": KEY},
    )
    assert done.returncode == 1 and "FAIL  transcription:" in done.stdout
    assert KEY not in done.stdout + done.stderr


async def test_an_address_without_v1_whose_models_answer_404_fails_and_says_to_add_it(
    tmp_path: Path, fake_transcription: FakeTranscription
) -> None:
    unversioned = fake_transcription.base_url.removesuffix("/v1")
    check = await transcription_check(tmp_path, base_url=unversioned, api_key=KEY)
    assert not check.ok
    assert "its /models answered HTTP 404" in check.detail
    assert "add /v1 to VAULTBOT_TRANSCRIBE__BASE_URL" in check.detail
