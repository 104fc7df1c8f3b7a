"""The review page's settings: a configured token shorter than 16 characters stops vaultbot with one
line and status 2, its value never shown; a public address may have a path (DESIGN), but not one that
starts like an address of the page itself, which a proxy that strips the path would confuse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.settings import ReviewSettings
from bot.web import routes
from tests.helpers import subprocess_env


@pytest.mark.parametrize("token", ["7", "fifteen-chars-x", " " * 3 + "x" * 15])
def test_a_token_shorter_than_16_characters_stops_vaultbot_with_one_line_and_status_2(
    tmp_path: Path, token: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "review", "--port", "0"],
        cwd=tmp_path,
        env=subprocess_env(VAULTBOT_REVIEW__TOKEN=token),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "vaultbot: VAULTBOT_REVIEW__TOKEN: must be at least 16 characters, so it cannot be guessed "
        "(the value is not shown: it is a secret)\n"
    )


def test_a_token_of_16_characters_or_none_is_taken() -> None:
    assert ReviewSettings(token="x" * 16).token is not None
    assert ReviewSettings(token="").token is None  # blank: generated and kept in the store


@pytest.mark.parametrize(
    ("given", "kept", "path"),
    [
        ("https://review.example.com", "https://review.example.com", ""),
        ("https://review.example.com/", "https://review.example.com", ""),
        ("https://home.example.com/review", "https://home.example.com/review", "/review"),
        ("https://home.example.com:8443/a/b-c/", "https://home.example.com:8443/a/b-c", "/a/b-c"),
        ("https://home.example.com/telegram", "https://home.example.com/telegram", "/telegram"),
    ],
)
def test_a_public_address_may_have_a_path(given: str, kept: str, path: str) -> None:
    review = ReviewSettings(public_url=given)
    assert (review.public_url, review.public_path) == (kept, path)
    assert review.app_url == f"{kept}/sign-in/telegram"


@pytest.mark.parametrize(
    "given",
    [
        "http://review.example.com",
        "https://",
        "https://home.example.com/review?x=1",
        "https://home.example.com/review#top",
        "https://home.example.com/a b",
        "https://home.example.com/../etc",
        "https://user@home.example.com/",
        "https://home.example.com/runs",
        "https://home.example.com/sign-in/x",
        "https://home.example.com/static",
        "javascript:alert(1)",
    ],
)
def test_a_public_address_that_is_not_one_is_refused(given: str) -> None:
    with pytest.raises(ValidationError):
        ReviewSettings(public_url=given)


def test_the_paths_a_public_address_may_not_start_with_are_the_pages_own() -> None:
    first = {route.path.split("/")[1] for route in routes()} - {""}
    refused = set()
    for segment in first | {"notes", "sign-out"}:
        try:
            ReviewSettings(public_url=f"https://home.example.com/{segment}")
        except ValidationError:
            refused.add(segment)
    assert refused == first
