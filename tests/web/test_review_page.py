"""The review page as a person visits it: a real Chromium on the real page, served by uvicorn over
a store filled by real turns (the real `anthropic` SDK talking to the fake Messages API)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import pytest
from playwright.async_api import Browser, Dialog, Locator, Page, expect

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox
from tests.web.conftest import Served

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[[App], Awaitable[Served]]

RUN_LINK = re.compile(r"^run [0-9a-f]{8}")
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1200, "height": 900}


@pytest.fixture
async def app(make_app: AppFactory, fake_anthropic: FakeAnthropic) -> App:
    return await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
    )


async def chat(app: App, *texts: str, conversation: str = "telegram:42") -> None:
    """Send messages through the bus and let the real runner handle them."""
    for text in texts:
        message = InboundMessage(channel="terminal", conversation=conversation, sender=Sender(id="ann"), text=text)
        await app.bus.publish(INBOUND, message, conversation=conversation)
    await run_inbox(app)


def file_a_task(fake: FakeAnthropic, title: str, content: str, summary: str, *, folder: str = "Tasks") -> None:
    """Script the model: write a note and log it, then say where it went."""
    fake.enqueue(
        api.tool_use(
            ("vault_write", {"folder": folder, "title": title, "content": content, "tags": ["task"]}),
            ("log_interaction", {"summary": summary, "category": "task"}),
        ),
        api.text(f"Filed under {folder}.", usage={"input_tokens": 1200, "output_tokens": 40}),
    )


async def follow(page: Page, link: Locator) -> None:
    """Click ``link`` and wait until the page it leads to has loaded: a click waits only for the
    navigation to start, and reading the page before then reads the one being left."""
    href = await link.get_attribute("href")
    assert href is not None
    await link.click()
    await page.wait_for_url(lambda url: url.endswith(href))


async def open_page(browser: Browser, url: str, *, viewport: dict[str, int] = DESKTOP) -> tuple[Page, list[str]]:
    """A fresh visitor on ``url``; returns the page and the dialogs any script opened."""
    context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    page = await context.new_page()
    dialogs: list[str] = []

    async def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        await dialog.dismiss()

    page.on("dialog", record)
    response = await page.goto(url)
    assert response is not None and response.status == 200, url
    return page, dialogs


async def no_sideways_scroll(page: Page) -> bool:
    await page.wait_for_load_state("load")  # measured with the stylesheet applied
    fits: Any = await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    return bool(fits)


async def test_without_the_token_every_request_is_refused_and_with_it_a_cookie_carries_on(
    app: App, browser: Browser, serve_review: Serve
) -> None:
    served = await serve_review(app)
    context = await browser.new_context()
    page = await context.new_page()
    for path in ("/", "/runs", "/static/review.css", "/?format=json", "/health"):
        refused = await page.goto(served.base + path)
        assert refused is not None and refused.status == 401, path
        assert "access token" in await page.inner_text("body")
    wrong = await page.goto(served.base + "/?token=not-the-token")
    assert wrong is not None and wrong.status == 403

    opened = await page.goto(served.url)
    # Signed in, the browser is sent on to the same address without the token.
    assert opened is not None and opened.status == 200 and opened.request.redirected_from is not None
    assert page.url == served.base + "/"
    await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    cookie = next(c for c in await context.cookies() if c["name"] == "vaultbot_review")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert served.token not in cookie["value"]

    await page.get_by_role("link", name="Runs").click()
    await expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    assert "token" not in page.url
    styled = await page.goto(served.base + "/static/review.css")
    assert styled is not None and styled.status == 200

    stranger = await (await browser.new_context()).new_page()
    again = await stranger.goto(served.base + "/runs")
    assert again is not None and again.status == 401


async def test_the_timeline_shows_a_real_chat_run_and_its_steps(
    app: App, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    file_a_task(fake_anthropic, "Buy oat milk", "- [ ] oat milk", "Filed a shopping task: oat milk")
    await chat(app, "remember to buy oat milk")
    served = await serve_review(app)

    page, _ = await open_page(browser, served.url)
    entry = page.get_by_role("listitem").filter(has_text="Filed a shopping task: oat milk")
    await expect(entry).to_be_visible()
    await expect(entry.get_by_text("task", exact=True)).to_be_visible()
    await expect(entry.get_by_text("telegram:42")).to_be_visible()
    await expect(entry.get_by_text("completed")).to_be_visible()
    await expect(entry.get_by_role("link", name="Tasks/Buy oat milk.md")).to_be_visible()

    await entry.get_by_role("link", name=RUN_LINK).click()
    await expect(page.get_by_role("heading", name="Run")).to_contain_text("completed")
    await expect(page.get_by_text("remember to buy oat milk")).to_be_visible()
    steps = page.locator("ol.steps > li")
    await expect(steps).to_have_count(4)
    await expect(steps.nth(0)).to_contain_text("model call")
    await expect(steps.nth(0)).to_contain_text("stop: tool_use")
    await expect(steps.nth(1)).to_contain_text("vault_write")
    await expect(steps.nth(1).get_by_text("path: Tasks/Buy oat milk.md", exact=False).first).to_be_visible()
    await expect(steps.nth(2)).to_contain_text("log_interaction")
    await expect(steps.nth(3)).to_contain_text("1,200 in")
    await expect(steps.nth(3)).to_contain_text("Filed under Tasks.")

    await page.get_by_role("link", name="Tasks/Buy oat milk.md").first.click()
    await expect(page.get_by_role("heading", name="Tasks/Buy oat milk.md")).to_be_visible()
    await expect(page.get_by_role("checkbox").or_(page.get_by_text("oat milk"))).not_to_have_count(0)
    obsidian = await page.get_by_role("link", name="Open in Obsidian").get_attribute("href")
    assert obsidian == "obsidian://open?vault=vault&file=Tasks%2FBuy%20oat%20milk"


async def test_a_failed_tool_call_is_highlighted_with_its_error_type(
    app: App, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    fake_anthropic.enqueue(
        api.tool_use(("vault_read", {"path": "Nowhere/missing"})),
        api.text("I could not find it."),
    )
    await chat(app, "what did I write in missing?")
    served = await serve_review(app)
    run = (await app.store.list_runs(limit=1))[0]

    page, _ = await open_page(browser, f"{served.base}/runs/{run['id']}?token={served.token}")
    failed = page.locator("ol.steps > li.failed")
    await expect(failed).to_have_count(1)
    await expect(failed).to_contain_text("vault_read")
    await expect(failed).to_contain_text("not_found")


XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


async def test_a_script_in_a_title_a_summary_and_a_note_body_is_shown_as_text_and_runs_nothing(
    app: App, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    body = f"{XSS}\n\n[click me](javascript:alert(3))\n\n<svg onload=alert(4)></svg>"
    file_a_task(fake_anthropic, f"Title {XSS}", body, f"Summary {XSS}", folder="Inbox")
    await chat(app, f"message {XSS}")
    served = await serve_review(app)

    page, dialogs = await open_page(browser, served.url)
    await expect(page.get_by_text(f"Summary {XSS}")).to_be_visible()
    await page.get_by_role("link", name=RUN_LINK).click()
    await expect(page.get_by_text(f"message {XSS}").first).to_be_visible()
    await expect(page.locator("ol.steps").get_by_text(f"title: Title {XSS}").first).to_be_visible()
    await page.locator("a.note").first.click()
    await expect(page.locator("dl.facts")).to_contain_text(f"Title {XSS}")
    note = page.locator("article.note-body")
    await expect(note).to_contain_text(XSS)
    await expect(note).to_contain_text("<svg onload=alert(4)></svg>")
    assert await note.locator("img, script, svg").count() == 0
    assert await note.get_by_role("link", name="click me").count() == 0
    assert dialogs == []


async def test_on_a_phone_no_page_scrolls_sideways(
    app: App, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    long_word = "supercalifragilistic" * 12
    file_a_task(fake_anthropic, "A very long title " + long_word, long_word + " " + "words " * 200, long_word)
    await chat(app, "a long message " + long_word)
    served = await serve_review(app)
    run = (await app.store.list_runs(limit=1))[0]
    pages = ["/", "/runs", f"/runs/{run['id']}", "/notes", "/usage", "/health"]
    page, _ = await open_page(browser, served.url, viewport=PHONE)
    for path in pages:
        await page.goto(served.base + path)
        assert await no_sideways_scroll(page), path
    await page.goto(served.base + "/notes")
    await page.locator("a.note").first.click()
    await expect(page.locator("article.note-body")).to_be_visible()
    assert await no_sideways_scroll(page), page.url


async def test_search_finds_an_entry_among_others(
    app: App, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    file_a_task(fake_anthropic, "Dentist", "call the dentist", "Reminder to call the dentist on Tuesday")
    file_a_task(fake_anthropic, "Oat milk", "buy oat milk", "Filed a shopping task: oat milk")
    await chat(app, "call the dentist", "buy oat milk")
    served = await serve_review(app)

    page, _ = await open_page(browser, served.url)
    await expect(page.locator("li.entry")).to_have_count(2)
    await page.get_by_role("searchbox", name="Search").fill("dentis")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator("li.entry")).to_have_count(1)
    await expect(page.locator("li.entry")).to_contain_text("Reminder to call the dentist on Tuesday")
    assert "q=dentis" in page.url

    await page.get_by_role("searchbox", name="Search").fill('oat" OR (')
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator("li.entry")).to_have_count(0)
    await expect(page.get_by_text("Nothing in the log matches these filters.")).to_be_visible()


async def test_each_page_has_a_json_twin(
    app: App, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    file_a_task(fake_anthropic, "Oat milk", "buy oat milk", "Filed a shopping task: oat milk")
    await chat(app, "buy oat milk")
    served = await serve_review(app)
    page, _ = await open_page(browser, served.url)

    async def twin(path: str) -> Any:
        response = await page.goto(f"{served.base}{path}{'&' if '?' in path else '?'}format=json")
        assert response is not None and response.status == 200, path
        return json.loads(await response.text())

    timeline = await twin("/")
    [entry] = timeline["entries"]
    assert entry["summary"] == "Filed a shopping task: oat milk" and entry["notes"] == ["Tasks/Oat milk.md"]
    run = await twin(f"/runs/{entry['run_id']}")
    assert [s["name"] for s in run["run"]["steps"]][1:3] == ["vault_write", "log_interaction"]
    assert run["run"]["message"] == "buy oat milk"
    note = await twin("/notes/Tasks/Oat%20milk.md")
    assert note["note"]["body"].strip() == "buy oat milk" and note["runs"][0]["run_id"] == entry["run_id"]
    assert (await twin("/?category=question"))["entries"] == []
    assert (await twin("/?status=completed"))["entries"][0]["id"] == entry["id"]
    today = datetime.now(app.settings.zone).date().isoformat()
    assert [e["id"] for e in (await twin(f"/?since={today}&until={today}"))["entries"]] == [entry["id"]]
    assert (await twin("/?until=2020-01-01"))["entries"] == []
    refused = await page.goto(served.base + "/?since=yesterday&format=json")
    assert refused is not None and refused.status == 400
    assert json.loads(await refused.text())["problems"] == ["“from” must be a date like 2026-11-23."]


async def test_the_usage_page_charts_todays_calls_and_measures_them_against_the_budget(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
        budget={"daily_usd": 100.0},
    )
    fake_anthropic.enqueue(
        api.text("Hello.", usage={"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 3000})
    )
    await chat(app, "hello")
    served = await serve_review(app)

    page, _ = await open_page(browser, served.url)
    await page.get_by_role("link", name="Usage").click()
    await expect(page.get_by_role("img", name="Cost per day and model, last 30 days")).to_be_visible()
    cost = page.get_by_role("img", name="Cost per day and model, last 30 days")
    await expect(cost.locator("rect")).to_have_count(1)
    await expect(page.locator("table.usage tbody tr")).to_have_count(1)
    await expect(page.locator("table.usage")).to_contain_text("claude-test")
    await expect(page.locator("dl.facts")).to_contain_text("of $100.00")
    await expect(page.locator("dl.facts")).to_contain_text("75.0 %")  # 3,000 of 4,000 input tokens from the cache
    assert float(await page.locator("meter").get_attribute("value") or 0) > 0
    spent = json.loads(await (await page.goto(served.base + "/usage?format=json")).text())  # type: ignore[union-attr]
    assert spent["rows"][0]["input_tokens"] == 1000 and spent["spent_today"] > 0


async def test_the_notes_page_pages_through_every_note_without_script_each_linked_to_its_run(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    # Capture mode files each message as a note; /note files one; then the assistant writes one.
    capture = await make_app()
    captured = [f"captured thought {i:03}" for i in range(118)]
    await chat(capture, *captured, "/note call the plumber about the sink")
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
    )
    file_a_task(fake_anthropic, "Buy oat milk", "- [ ] oat milk", "Filed a shopping task: oat milk")
    await chat(app, "remember to buy oat milk")
    served = await serve_review(app)
    runs = {run["model"]: run["id"] for run in await app.store.list_runs(limit=200)}

    context = await browser.new_context(java_script_enabled=False)
    page = await context.new_page()
    await page.goto(served.url)
    await follow(page, page.get_by_role("link", name="Notes", exact=True))
    pages: list[list[str]] = []
    while True:
        pages.append(await page.locator("a.note").all_inner_texts())
        older = page.get_by_role("link", name="Older notes →").first
        if not await older.count():
            break
        await follow(page, older)
    seen = [path for shown in pages for path in shown]
    expected = ["Tasks/Buy oat milk.md", "Inbox/call the plumber about the sink.md"]
    expected += [f"Inbox/{text}.md" for text in reversed(captured)]
    assert seen == expected  # every note once, newest first, in pages of at most 50
    assert [len(shown) for shown in pages] == [50, 50, 20]

    await follow(page, page.get_by_role("link", name="← Newer notes").first)
    assert await page.locator("a.note").all_inner_texts() == pages[1]
    await follow(page, page.get_by_role("link", name="← Newer notes").first)
    assert await page.locator("a.note").all_inner_texts() == pages[0]
    assert await page.get_by_role("link", name="← Newer notes").count() == 0

    noted = page.get_by_role("listitem").filter(has_text="call the plumber")
    await expect(noted).to_contain_text("by /note")
    await follow(page, noted.get_by_role("link", name=RUN_LINK))
    assert page.url.endswith(f"/runs/{runs['/note']}")
    await expect(page.locator("ol.steps")).to_contain_text("vault_write")
    await page.get_by_role("link", name="Inbox/call the plumber about the sink.md").first.click()
    await expect(page.get_by_role("link", name=f"run {runs['/note'][:8]}")).to_be_visible()

    await page.goto(served.base + "/notes")
    captured_entry = page.get_by_role("listitem").filter(has_text="captured thought 117")
    await expect(captured_entry).to_contain_text("captured")
    await expect(captured_entry.get_by_role("link", name=RUN_LINK)).to_be_visible()


# Every number in the page's text whose rendered line boxes are more than one line (broken inside
# itself), and the smallest rendered font size of the charts' labels (an SVG's text is scaled with it).
MEASURE = """() => {
  const broken = [];
  const walker = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.data.matchAll(/\\$?\\d[\\d,]*(\\.\\d+)?/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) broken.push(m[0]);
    }
  }
  const sizes = [];
  for (const figure of document.querySelectorAll("figure")) {
    for (const el of figure.querySelectorAll("*")) {
      if (![...el.childNodes].some(n => n.nodeType === 3 && n.data.trim())) continue;
      if (el.closest("title")) continue;
      const size = parseFloat(getComputedStyle(el).fontSize);
      sizes.push(el instanceof SVGGraphicsElement ? size * el.getScreenCTM().a : size);
    }
  }
  return {broken, smallest: Math.min(...sizes), labels: sizes.length};
}"""


async def test_the_usage_page_reads_on_a_360_px_phone(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, browser: Browser, serve_review: Serve
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
        budget={"daily_usd": 100.0},
    )
    big = {"input_tokens": 1439, "output_tokens": 123456, "cache_read_input_tokens": 1234567}
    fake_anthropic.enqueue(api.text("Hello.", usage={**big, "cache_creation_input_tokens": 234567}))
    await chat(app, "hello")
    served = await serve_review(app)

    page, _ = await open_page(browser, served.url, viewport={"width": 360, "height": 800})
    await page.goto(served.base + "/usage")
    await page.wait_for_load_state("load")
    measured = await page.evaluate(MEASURE)
    assert measured["broken"] == []
    assert measured["labels"] >= 6 and measured["smallest"] >= 11
    assert await no_sideways_scroll(page)
    for number in ("1,439", "123,456", "1,234,567", "234,567"):
        await expect(page.locator("main").get_by_text(number, exact=True)).to_be_visible()
