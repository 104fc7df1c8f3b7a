"""In a real Chromium: the notes list shows the pages clipped beside the notes written, each with the
run that clipped it; and a run whose message holds a document's whole text shows its start, folded,
so the steps stay near the top on a phone, the rest a tap away."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from playwright.async_api import Browser, expect

from bot.app import App
from bot.bus import INBOUND, Document, InboundMessage, Sender
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.web_server import FakeWeb
from tests.helpers import run_inbox
from tests.runner.conftest import send
from tests.web.conftest import Served
from tests.web.test_review_page import RUN_LINK, open_page

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[[App], Awaitable[Served]]
PHONE = {"width": 360, "height": 740}


async def test_the_notes_list_shows_clipped_pages_with_the_run_that_clipped_them(
    make_app: AppFactory, browser: Browser, serve_review: Serve
) -> None:
    app = await make_app(clip={"allow_private": True})  # capture mode clips a message that is only a link
    with FakeWeb() as web:
        for text in ("buy oat milk", web.url("/recipe")):
            await send(app, text)
            await run_inbox(app)
    [clipping, capture] = await app.store.list_runs(limit=2)
    served = await serve_review(app)

    page, _ = await open_page(browser, served.base + f"/notes?token={served.token}", viewport=PHONE)
    assert await page.locator("a.note").all_inner_texts() == ["Clippings/Easy Lentil Soup.md", "Inbox/buy oat milk.md"]
    clipped = page.get_by_role("listitem").filter(has_text="Clippings/Easy Lentil Soup.md")
    await expect(clipped).to_contain_text("clipped in capture mode")
    await expect(clipped.get_by_role("link", name=RUN_LINK)).to_have_attribute("href", f"/runs/{clipping['id']}")
    await expect(page.get_by_role("listitem").filter(has_text="Inbox/buy oat milk.md")).to_contain_text("captured")

    await page.get_by_role("link", name="Clippings/Easy Lentil Soup.md").click()
    await expect(page.get_by_role("heading", name="Clippings/Easy Lentil Soup.md")).to_be_visible()
    wrote = page.get_by_role("listitem").filter(has_text=f"run {clipping['id'][:8]}")
    await expect(wrote).to_contain_text("clip")
    await expect(page.locator("article.note-body")).to_contain_text("red lentils")
    assert capture["id"] != clipping["id"]


async def test_a_long_message_is_folded_above_the_steps_on_a_phone(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
    )
    lines = [f"Clause {n}: the tenant keeps the garden tidy and the hedge below two metres." for n in range(1, 180)]
    (app.notes.root / "Attachments").mkdir()
    (app.notes.root / "Attachments" / "lease.txt").write_text("\n".join(lines) + "\nThe very last clause.\n")
    fake_anthropic.enqueue(api.text("It is a lease of 180 clauses."))
    message = InboundMessage(
        channel="terminal",
        conversation="terminal:ann",
        sender=Sender(id="ann"),
        text="what does my lease say?",
        document=Document(path="Attachments/lease.txt"),
    )
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    [run] = await app.store.list_runs(limit=1)
    served = await serve_review(app)

    page, _ = await open_page(browser, served.base + f"/runs/{run['id']}?token={served.token}", viewport=PHONE)
    steps = await page.get_by_role("heading", name="Steps").bounding_box()
    assert steps is not None and steps["y"] < 1_500  # the whole text would put them 13,000 px down
    await expect(page.get_by_text("what does my lease say?").first).to_be_visible()
    message = page.locator("details.long-message")
    await expect(message.get_by_text("The very last clause.")).to_be_hidden()
    assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    await message.get_by_text("Show the whole message").click()
    last = message.get_by_text("The very last clause.")
    await last.scroll_into_view_if_needed()
    await expect(last).to_be_visible()
