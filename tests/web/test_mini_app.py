"""The review page as a Telegram Mini App, in a real Chromium at a phone's 360×740: opened with init
data the test signs (tests/web/telegram_init_data.py) in the address's fragment, as Telegram opens it,
with Telegram's theme; the bot's own Telegram WebView bridge stood in for by a recorder of its events."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from bot.app import App
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import DEFAULT_TOKEN
from tests.web.conftest import Served
from tests.web.telegram_init_data import fragment, signed
from tests.web.test_review_page import chat

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[[App], Awaitable[Served]]

COOKIE = "vaultbot_review"
PHONE = {"width": 360, "height": 740}
RUN_LINK = re.compile(r"^run [0-9a-f]{8}")
# Telegram's theme parameters as its Android app sends them, light and dark.
LIGHT = {
    "bg_color": "#ffffff",
    "secondary_bg_color": "#f0f0f0",
    "section_bg_color": "#ffffff",
    "text_color": "#222222",
    "hint_color": "#a8a8a8",
    "subtitle_text_color": "#82868a",
    "link_color": "#2678b6",
    "button_color": "#50a8eb",
    "button_text_color": "#ffffff",
    "section_separator_color": "#d9d9d9",
    "destructive_text_color": "#cc2929",
}
DARK = {
    "bg_color": "#212d3b",
    "secondary_bg_color": "#151e27",
    "section_bg_color": "#1d2733",
    "text_color": "#ffffff",
    "hint_color": "#7d8b99",
    "subtitle_text_color": "#7e8b98",
    "link_color": "#5eabe1",
    "button_color": "#50a8eb",
    "button_text_color": "#ffffff",
    "section_separator_color": "#0d1218",
    "destructive_text_color": "#ee686f",
}
LONG_THOUGHT = "Let me think this through properly before I file anything. " * 12
# Records what the page tells Telegram, as Telegram's WebView bridge would receive it.
TELEGRAM_WEBVIEW = """
window.telegramEvents = [];
window.TelegramWebviewProxy = {
  postEvent: function (type, data) { window.telegramEvents.push([type, JSON.parse(data)]); }
};
"""


@pytest.fixture
async def app(make_app: AppFactory, fake_anthropic: FakeAnthropic) -> App:
    return await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
        telegram={"token": DEFAULT_TOKEN, "allowed_users": [42]},
        review={"public_url": "https://review.example.com"},
    )


@pytest.fixture
async def served(app: App, fake_anthropic: FakeAnthropic, serve_review: Serve) -> Served:
    fake_anthropic.enqueue(
        api.tool_use(
            (
                "vault_write",
                {"folder": "Tasks", "title": "Buy oat milk", "content": "- [ ] oat milk", "tags": ["task"]},
            ),
            ("log_interaction", {"summary": "Filed a task: buy oat milk", "category": "task"}),
            preamble=LONG_THOUGHT,
        ),
        api.text("Filed under Tasks."),
    )
    await chat(app, "remember to buy oat milk")
    return await serve_review(app)


async def phone(browser: Browser, *, in_telegram: bool = False) -> tuple[BrowserContext, Page]:
    context = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)  # type: ignore[arg-type]
    if in_telegram:
        await context.add_init_script(TELEGRAM_WEBVIEW)
    return context, await context.new_page()


async def open_mini_app(page: Page, served: Served, init_data: str, theme: dict[str, Any] | None = LIGHT) -> int:
    """Open the Mini App as Telegram does; the status the sign-in was answered with."""
    async with page.expect_response(lambda r: r.request.method == "POST") as answer:
        await page.goto(f"{served.base}/sign-in/telegram{fragment(init_data, theme)}")
    return (await answer.value).status


async def colours(page: Page) -> tuple[str, str]:
    found: Any = await page.evaluate(
        "[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]"
    )
    return found[0], found[1]


def rgb(hex_colour: str) -> str:
    value = int(hex_colour[1:], 16)
    return f"rgb({value >> 16}, {(value >> 8) & 255}, {value & 255})"


async def fits_the_width(page: Page) -> bool:
    fits: Any = await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    return bool(fits)


async def small_tap_targets(page: Page) -> list[str]:
    """Every visible link, button, summary and field under 44 px high (the text of a note excepted)."""
    found: Any = await page.evaluate(
        """[...document.querySelectorAll('a, button, summary, input, select')]
             .filter(el => !el.closest('.note-body') && el.getClientRects().length > 0)
             .filter(el => el.getBoundingClientRect().height < 44)
             .map(el => el.tagName + ' ' + (el.textContent || el.name || '').trim().slice(0, 30)
                        + ' ' + Math.round(el.getBoundingClientRect().height) + 'px')"""
    )
    return list(found)


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
async def test_opened_from_telegram_the_timeline_comes_first_in_telegrams_colours_on_a_phone(
    served: Served, browser: Browser, theme: dict[str, str]
) -> None:
    context, page = await phone(browser)
    assert await open_mini_app(page, served, signed(DEFAULT_TOKEN), theme) == 204
    await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    assert page.url == served.base + "/"
    await expect(page.get_by_text("Filed a task: buy oat milk")).to_be_visible()
    assert await colours(page) == (rgb(theme["secondary_bg_color"]), rgb(theme["text_color"]))
    assert await fits_the_width(page)
    assert await small_tap_targets(page) == []
    cookie = next(c for c in await context.cookies() if c["name"] == COOKIE)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"

    # The theme stays for the rest of the visit (Telegram gives it only to the first address).
    await page.get_by_role("link", name="Runs", exact=True).click()
    await expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    assert await colours(page) == (rgb(theme["secondary_bg_color"]), rgb(theme["text_color"]))
    await page.get_by_role("link", name=RUN_LINK).first.click()
    await expect(page.get_by_role("heading", name="Steps")).to_be_visible()
    assert await fits_the_width(page)
    assert await small_tap_targets(page) == []
    await context.close()


def stale() -> str:
    return signed(DEFAULT_TOKEN, auth_date=int(time.time()) - 6 * 60)


def forged() -> str:
    good = signed(DEFAULT_TOKEN)
    return good[:-1] + ("0" if not good.endswith("0") else "1")


@pytest.mark.parametrize(
    ("init_data", "status", "says"),
    [
        (forged, 403, "Telegram did not sign this init data for this bot"),
        (lambda: signed("654321:ANOTHER-bot"), 403, "Telegram did not sign this init data for this bot"),
        (stale, 403, "more than 5 minutes old"),
        (lambda: signed(DEFAULT_TOKEN, user_id=43), 403, "Telegram user 43 is not on this bot's allowlist"),
        (lambda: "", 401, "Open this page from the bot's Review button in Telegram"),
    ],
    ids=["forged-hash", "another-bot", "older-than-5-minutes", "not-allowlisted", "none"],
)
async def test_init_data_that_proves_nothing_gets_a_refusal_and_nothing_of_the_page(
    served: Served, browser: Browser, init_data: Callable[[], str], status: int, says: str
) -> None:
    context, page = await phone(browser)
    data = init_data()
    if data:
        assert await open_mini_app(page, served, data) == status
    else:
        await page.goto(f"{served.base}/sign-in/telegram{fragment('', LIGHT)}")
    await expect(page.get_by_role("status")).to_contain_text(says)
    assert "oat milk" not in await page.content()
    assert [c for c in await context.cookies() if c["name"] == COOKIE] == []
    refused = await page.goto(served.base + "/")
    assert refused is not None and refused.status == 401
    await context.close()


async def test_telegrams_back_button_goes_back_and_replaces_the_pages_back_link(
    served: Served, browser: Browser
) -> None:
    context, page = await phone(browser, in_telegram=True)
    await open_mini_app(page, served, signed(DEFAULT_TOKEN))
    await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    events: Any = await page.evaluate("window.telegramEvents")
    assert ["web_app_setup_back_button", {"is_visible": False}] in events  # the first page: Telegram closes the app
    assert ["web_app_ready", {}] in events

    await page.locator("a.run").first.click()
    await expect(page.get_by_role("heading", name="Steps")).to_be_visible()
    assert ["web_app_setup_back_button", {"is_visible": True}] in await page.evaluate("window.telegramEvents")
    await expect(page.locator("a.back")).to_be_hidden()
    # Telegram tells the page its back button was pressed the way it does without its own script.
    await page.evaluate("window.Telegram.WebView.receiveEvent('back_button_pressed', null)")
    await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    await context.close()


async def test_outside_telegram_a_plain_link_goes_back(served: Served, browser: Browser) -> None:
    context, page = await phone(browser)
    await page.goto(served.url)
    await page.locator("a.run").first.click()
    await expect(page.get_by_role("heading", name="Steps")).to_be_visible()
    await page.get_by_role("link", name="← Runs").click()
    await expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    await page.get_by_role("link", name="← Timeline").click()
    await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    await context.close()


async def test_a_runs_steps_are_folded_under_their_heads_until_tapped(served: Served, browser: Browser) -> None:
    context, page = await phone(browser)
    await open_mini_app(page, served, signed(DEFAULT_TOKEN))
    await page.locator("a.run").first.click()
    thought = page.locator("ol.steps > li").first
    await expect(thought).to_contain_text("model call")
    said = thought.locator("p.said")
    await expect(said).to_have_text(LONG_THOUGHT.strip())
    await expect(said).to_be_hidden()
    await thought.locator("summary").click()
    await expect(said).to_be_visible()
    await context.close()


async def test_the_cookie_is_secure_and_partitioned_when_the_proxy_says_the_request_came_over_https(
    served: Served,
) -> None:
    https = {"x-forwarded-proto": "https", "origin": "https://review.example.com"}
    local = {"origin": served.base}
    for headers, secure in ((https, True), (local, False)):
        init_data = signed(DEFAULT_TOKEN, extra={"query_id": f"AAH-{secure}"})  # init data signs in once
        async with httpx.AsyncClient(base_url=served.base) as client:
            signed_in = await client.post("/sign-in/telegram", content=init_data, headers=headers)
            assert signed_in.status_code == 204
            by_token = await client.get("/", params={"token": served.token}, headers=headers)
        for response in (signed_in, by_token):
            flags = {f.strip().lower() for f in response.headers["set-cookie"].split(";")[1:]}
            expected = {"path=/", "max-age=43200", "httponly"}
            # Over https: for Telegram Web's frame of web.telegram.org, where a strict cookie is never sent.
            expected |= {"secure", "samesite=none", "partitioned"} if secure else {"samesite=strict"}
            assert flags == expected, response.headers["set-cookie"]
        # Each sign-in is a session of its own, and opens every page.
        assert signed_in.cookies[COOKIE] != by_token.cookies[COOKIE]
        for cookie in (signed_in.cookies[COOKIE], by_token.cookies[COOKIE]):
            async with httpx.AsyncClient(base_url=served.base, cookies={COOKIE: cookie}) as client:
                assert (await client.get("/runs")).status_code == 200
