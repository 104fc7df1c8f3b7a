"""The review page lists the dead letters waiting for a retry, each with where it was filed and the
`vaultbot retry` command to run; it never writes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from playwright.async_api import Browser, expect

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from bot.store import DeadLetters
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox
from tests.web.conftest import Served

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[[App], Awaitable[Served]]


async def test_the_dead_letters_page_shows_each_message_with_its_retry_command(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"sdk_max_retries": 0},
    )
    fake_anthropic.handler = lambda body: api.status(529, "overloaded_error")
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="buy milk")
    await app.bus.publish(INBOUND, message, conversation="terminal:ann")
    await run_inbox(app)
    [letter] = await DeadLetters(app.db).waiting()
    served = await serve_review(app)
    page = await browser.new_page()
    await page.goto(served.url)
    await page.goto(served.base + "/health")
    await page.get_by_role("link", name="The dead letters to retry, with their commands").click()

    await expect(page.get_by_role("heading", name="Dead letters")).to_be_visible()
    await expect(page.get_by_text(f"vaultbot retry {letter.run_id[:8]}")).to_be_visible()
    await expect(page.get_by_role("link", name="Inbox/buy milk.md")).to_be_visible()
    await expect(page.get_by_text("buy milk", exact=True)).to_be_visible()
