"""`vault_read` of an image path shows the model the image (a tool_result with an image block),
confined like notes; a 50 MB PNG is shown reduced; history keeps no pixels. The real SDK against
the fake Messages API, the real vault on disk."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic, image_blocks
from tests.helpers import run_inbox
from tests.images.pictures import QUADRANTS, close, decoded, encoded, quadrant_colours, upright

AppFactory = Callable[..., Awaitable[App]]


async def claude(make_app: AppFactory, anthropic: FakeAnthropic) -> App:
    return await make_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
    )


async def ask(app: App, text: str) -> None:
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=text)
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)


def reading(path: str) -> Callable[[dict[str, Any]], api.Canned]:
    """A model that reads ``path`` once, then answers."""

    def answer(body: dict[str, Any]) -> api.Canned:
        if isinstance(body["messages"][-1]["content"], str):
            return api.tool_use(("vault_read", {"path": path}))
        return api.text("Seen.")

    return answer


def tool_result(body: dict[str, Any]) -> dict[str, Any]:
    [result] = [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    return result


async def test_vault_read_of_an_image_shows_it_to_the_model_and_history_keeps_no_pixels(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    app = await claude(make_app, fake_anthropic)
    (app.notes.root / "Boards").mkdir()
    (app.notes.root / "Boards" / "plan.png").write_bytes(encoded(upright(), "PNG"))
    fake_anthropic.handler = reading("Boards/plan.png")
    await ask(app, "what is on the plan?")
    result = tool_result(fake_anthropic.requests[1].body)
    assert "is_error" not in result
    [block] = image_blocks([result])
    image = decoded(block)
    assert image.size == (300, 200) and all(
        close(c, q) for c, q in zip(quadrant_colours(image), QUADRANTS, strict=True)
    )
    assert '"path": "Boards/plan.png"' in result["content"][0]["text"]
    # Pixels may carry someone else's words (a screenshot): the result is labelled, so the run is tainted.
    assert result["content"][0]["text"].startswith('<untrusted source="image" id="')
    fake_anthropic.handler = lambda body: api.text("Still here.")
    await ask(app, "thanks")
    assert [image_blocks(m["content"]) for m in fake_anthropic.requests[2].body["messages"]] == [[]] * 5
    # The audit trail names the image; the pixels stay in the vault.
    steps = await app.db.fetchall("SELECT input, output FROM steps")
    assert steps and not any(block["source"]["data"][:40] in row["input"] + row["output"] for row in steps)


async def test_a_50_mb_png_in_the_vault_is_shown_reduced(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    app = await claude(make_app, fake_anthropic)
    noise = Image.frombytes("RGB", (4096, 4096), os.urandom(4096 * 4096 * 3))
    big = encoded(noise, "PNG", compress_level=0)
    assert len(big) > 50_000_000
    (app.notes.root / "scan.png").write_bytes(big)
    fake_anthropic.handler = reading("scan.png")
    await ask(app, "read the scan")
    [block] = image_blocks([tool_result(fake_anthropic.requests[1].body)])
    assert decoded(block).size == (1568, 1568)
    assert len(block["source"]["data"]) <= 5 * 1024 * 1024
    assert (app.notes.root / "scan.png").stat().st_size == len(big)  # the original, untouched


@pytest.mark.parametrize(
    ("path", "error_type"),
    [
        (".obsidian/secret.png", "path_not_allowed"),
        ("../outside.png", "path_not_allowed"),
        ("Attachments/link.png", "path_not_allowed"),  # a symlink out of the vault
        ("Attachments/missing.png", "not_found"),
    ],
)
async def test_vault_read_of_an_image_is_confined_like_notes(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, tmp_path: Path, path: str, error_type: str
) -> None:
    app = await claude(make_app, fake_anthropic)
    secret = encoded(upright(), "PNG")
    (tmp_path / "outside.png").write_bytes(secret)
    (app.notes.root / ".obsidian").mkdir(exist_ok=True)
    (app.notes.root / ".obsidian" / "secret.png").write_bytes(secret)
    (app.notes.root / "Attachments").mkdir()
    (app.notes.root / "Attachments" / "link.png").symlink_to(tmp_path / "outside.png")
    fake_anthropic.handler = reading(path)
    await ask(app, "show me")
    result = tool_result(fake_anthropic.requests[1].body)
    assert result["is_error"] is True and f'"error_type": "{error_type}"' in result["content"]
    assert image_blocks([result]) == []
