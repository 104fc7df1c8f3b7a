"""Image tokens are in `usage` as the API reports them and count toward the daily budget: the real
SDK against the fake Messages API, which charges an image by its pixels (width × height / 750)."""

from __future__ import annotations

import io
import math
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC

import pytest
from PIL import Image

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox

AppFactory = Callable[..., Awaitable[App]]
IMAGE_TOKENS = math.ceil(1568 * 1176 / 750)  # a 4000 × 3000 photo as the model sees it


@pytest.fixture
def metered() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prompt_cache=True) as fake:
        yield fake


def photo_message(app: App, name: str, text: str) -> InboundMessage:
    out = io.BytesIO()
    Image.effect_noise((4000, 3000), 40).convert("RGB").save(out, "JPEG")
    (app.notes.root / "Attachments").mkdir(exist_ok=True)
    (app.notes.root / "Attachments" / name).write_bytes(out.getvalue())
    return InboundMessage(
        channel="terminal",
        conversation="terminal:ann",
        sender=Sender(id="ann"),
        text=text,
        images=[f"Attachments/{name}"],
    )


async def test_a_photo_s_tokens_are_recorded_as_reported_and_spend_the_budget(
    make_app: AppFactory, metered: FakeAnthropic
) -> None:
    # claude-sonnet-5 costs $2 per million input tokens: the photo alone is about half a cent.
    app = await make_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=metered.base_url,
        model={"name": "claude-sonnet-5", "sdk_max_retries": 0},
        budget={"daily_usd": 0.004},
    )
    metered.handler = lambda body: api.text("A noisy picture.")
    message = photo_message(app, "noise.jpg", "what is this?")
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    [reported] = metered.usages
    fresh, written = reported["input_tokens"], reported["cache_creation_input_tokens"]
    assert fresh + written >= IMAGE_TOKENS  # the message (photo included) is written to the prompt cache
    [row] = await app.store.usage_by_day(None, UTC)
    assert (row.input_tokens, row.cache_write_tokens) == (fresh, written)  # as the API reported them
    assert row.cost_usd == pytest.approx(2e-6 * fresh + 2.5e-6 * written + 1e-5 * reported["output_tokens"])

    # The photo spent the day's budget: the next message is filed without the model.
    text = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="and now?")
    await app.bus.publish(INBOUND, text, conversation=text.conversation)
    await run_inbox(app)
    assert len(metered.requests) == 1
    runs = await app.store.list_runs()
    assert sorted(run["mode"] for run in runs) == ["assistant", "capture"]
