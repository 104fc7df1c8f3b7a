"""MCP on the review page, as a person reads it: each call a step with its server's result, a failed
one highlighted with its error type, each server's state on the health page, and no secret of a
server's anywhere."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from playwright.async_api import Browser, expect

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from bot.cli.serve import configuration
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox
from tests.mcp.conftest import SECRET, stdio
from tests.web.conftest import Served

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[[App], Awaitable[Served]]


async def test_the_run_page_shows_each_mcp_call_masked_and_a_failed_one_highlighted(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"sdk_max_retries": 0},
        mcp={"servers": {"files": stdio(env={"SECRET": SECRET})}},
    )
    fake_anthropic.enqueue(
        api.tool_use(("mcp__files__secret", {}), ("mcp__files__die", {})),
        api.text("The server told me a secret and then died."),
    )
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="go")
    await app.bus.publish(INBOUND, message, conversation="terminal:ann")
    await run_inbox(app)
    served = await serve_review(app)
    [run] = await app.store.list_runs(limit=1)

    context = await browser.new_context()
    page = await context.new_page()
    response = await page.goto(f"{served.base}/runs/{run['id']}?token={served.token}")
    assert response is not None and response.status == 200
    steps = page.locator("ol.steps > li.k-tool")
    await expect(steps.filter(has_text="mcp__files__secret")).to_contain_text("the secret is ***!")
    failed = page.locator("ol.steps > li.failed")
    await expect(failed).to_have_count(1)
    await expect(failed).to_contain_text("mcp__files__die")
    await expect(failed).to_contain_text("unavailable")
    assert SECRET not in await page.content()


async def test_the_health_page_lists_each_mcp_server_with_its_state(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        mcp={"servers": {"files": stdio(env={"SECRET": SECRET}), "broken": stdio("crash", env={"SECRET": SECRET})}},
    )
    await app.store.record_bot_config(configuration(app))  # as vaultbot run records it when it starts
    served = await serve_review(app)

    page = await (await browser.new_context()).new_page()
    await page.goto(f"{served.base}/health?token={served.token}")
    servers = page.locator("dl.config > div").filter(has_text="MCP servers")
    await expect(servers).to_contain_text("files: ready, 11 tools")  # its "odd.name/with spaces" is refused
    await expect(servers).to_contain_text("broken: failed (the server closed the connection (it said: fatal:")
    assert SECRET not in await page.content()
