"""The profile note reaches the model in the cached part of the system prompt, read fresh each turn,
through the real SDK against the fake API with its prompt-cache accounting."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from bot.app import App
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox
from tests.runner.conftest import send

AppFactory = Callable[..., Awaitable[App]]


@pytest.fixture
def cached_api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prompt_cache=True) as fake:
        fake.handler = lambda body: api.text("Noted.")
        yield fake


async def open_app(make_app: AppFactory, fake: FakeAnthropic, **overrides: Any) -> App:
    return await make_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
        **overrides,
    )


def profile_block(body: dict[str, Any]) -> dict[str, Any]:
    """The system block that carries the profile note."""
    return next(block for block in body["system"] if "What you know about the person you assist" in block["text"])


async def test_the_profile_is_in_the_cached_system_block_and_costs_cache_reads_on_the_next_turn(
    make_app: AppFactory, cached_api: FakeAnthropic
) -> None:
    app = await open_app(make_app, cached_api)
    (app.notes.root / "About me.md").write_text("Partner: Sam. Lives in Lisbon. Vegetarian.\n", encoding="utf-8")
    for text in ("what should I cook tonight?", "and tomorrow?"):
        await send(app, text)
        await run_inbox(app)
    first, second = (request.body for request in cached_api.requests)
    block = profile_block(first)
    assert "Partner: Sam. Lives in Lisbon. Vegetarian." in block["text"]
    assert block is first["system"][-1] and block["cache_control"] == {"type": "ephemeral"}
    assert 'mode "append"' in block["text"] and "lasting fact" in block["text"]
    # The second turn reads the whole system prompt, the profile included, from the cache.
    assert first["system"] == second["system"]
    assert cached_api.usages[1]["cache_read_input_tokens"] >= cached_api.usages[0]["cache_creation_input_tokens"]


async def test_an_edit_made_outside_vaultbot_shows_on_the_next_turn(
    make_app: AppFactory, cached_api: FakeAnthropic
) -> None:
    app = await open_app(make_app, cached_api, memory={"note": "People/Me.md"})
    await send(app, "hello")
    await run_inbox(app)
    assert "does not exist yet" in profile_block(cached_api.requests[0].body)["text"]
    (app.notes.root / "People").mkdir()
    (app.notes.root / "People" / "Me.md").write_text("---\ntags: [me]\n---\nAllergic to peanuts.\n", encoding="utf-8")
    await send(app, "what snacks can I have?")
    await run_inbox(app)
    text = profile_block(cached_api.requests[1].body)["text"]
    assert "Allergic to peanuts." in text and "tags: [me]" not in text
    assert 'folder "People", title "Me"' in text


async def test_a_profile_over_two_thousand_words_is_to_be_condensed(
    make_app: AppFactory, cached_api: FakeAnthropic
) -> None:
    app = await open_app(make_app, cached_api)
    (app.notes.root / "About me.md").write_text("Likes tea. " * 1050, encoding="utf-8")  # 2,100 words
    await send(app, "hi")
    await run_inbox(app)
    (app.notes.root / "About me.md").write_text("Likes tea. " * 900, encoding="utf-8")  # 1,800 words
    await send(app, "hi again")
    await run_inbox(app)
    over, under = (profile_block(request.body)["text"] for request in cached_api.requests)
    assert "2,100 words, more than 2,000: condense it" in over and 'mode "replace"' in over
    assert "condense" not in under
