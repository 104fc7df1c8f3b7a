"""The run page shows words where a person expects words: someone else's text as text with a tag naming
whose it is (not the label's markup the model reads), and a tool's input and result as key: value lines
(not JSON), the JSON twin keeping both as stored. A real Chromium on a run where an obedient model
followed a forward's orders."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from playwright.async_api import Browser, expect

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender, UntrustedPart
from tests.consent.obedient import obedient, orders
from tests.fakes.scripted_model import ScriptedModel
from tests.helpers import run_inbox
from tests.web.conftest import Served

PHONE = {"width": 360, "height": 740}
NOTE = {"folder": "Inbox", "title": "Dinner", "content": "Dinner with Bob on Friday at 8.\nBring wine."}


async def test_a_forward_and_a_tool_call_read_as_words_on_the_run_page_and_stay_raw_in_its_json_twin(
    make_app: Callable[..., Awaitable[App]], browser: Browser, serve_review: Callable[[App], Awaitable[Served]]
) -> None:
    app = await make_app(ScriptedModel(obedient))
    said = f"Dinner Friday? {orders([['vault_write', NOTE]])}"
    forwarded = UntrustedPart(source="forwarded message", text=said, origin="Bob")
    message = InboundMessage(
        channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="file this",
        untrusted=[forwarded],
    )
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    [run] = await app.store.list_runs(limit=1)
    served = await serve_review(app)

    context = await browser.new_context(viewport=PHONE)  # type: ignore[arg-type]
    page = await context.new_page()
    await page.goto(served.url)
    await page.goto(f"{served.base}/runs/{run['id']}")
    said = page.locator("blockquote.message").first
    await expect(said).to_contain_text("file this")
    tag = said.locator(".tag.source")
    await expect(tag).to_have_text("someone else's words: forwarded message")
    await expect(said.locator(".theirs")).to_contain_text("Dinner Friday?")
    assert "untrusted" not in await page.locator("main").inner_text()  # no label markup anywhere

    step = page.locator("li.step.k-tool").filter(has_text="vault_write").first
    await step.locator("summary").click()
    given = step.locator(".readable").first
    await expect(given).to_be_visible()
    assert [await dt.inner_text() for dt in await given.locator("dt").all()] == ["folder:", "title:", "content:"]
    await expect(given.locator("dd").nth(1)).to_have_text("Dinner")
    await expect(given.locator("dd").nth(2)).to_have_text(NOTE["content"])  # its lines kept, no \n escapes
    result = step.locator(".readable").nth(1)
    await expect(result).to_contain_text("path:")
    await expect(result).to_contain_text("Inbox/Dinner.md")
    for shown in (await given.inner_text(), await result.inner_text()):
        assert '{"' not in shown and '\\n' not in shown  # no JSON
    assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    response = await page.goto(f"{served.base}/runs/{run['id']}?format=json")
    assert response is not None and response.status == 200
    twin = json.loads(await response.text())["run"]
    [written] = [s for s in twin["steps"] if s["name"] == "vault_write"]
    assert written["input"] == NOTE and written["output"]["path"] == "Inbox/Dinner.md"
    assert '<untrusted source="forwarded message"' in twin["message"]  # the twin keeps the record as stored
