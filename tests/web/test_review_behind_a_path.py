"""The review page at a public address with a path (DESIGN: `VAULTBOT_REVIEW__PUBLIC_URL` "may have a
path … behind a proxy that passes the path on or one that strips it"): through a real proxy of each
kind (tests/web/proxy.py) every link, redirect and sign-in stays under the path, in Chromium as a
person sees it and by walking every link of every page."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from playwright.async_api import Browser, expect

from bot.app import App
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import DEFAULT_TOKEN
from tests.web.conftest import Served
from tests.web.proxy import path_proxy
from tests.web.telegram_init_data import fragment, signed
from tests.web.test_review_page import chat, file_a_task

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[..., Awaitable[Served]]

COOKIE = "vaultbot_review"
PATH = "/app"
LINK = re.compile(r'(?:href|src|action)="([^"#]*)"')


@pytest.fixture
async def served(make_app: AppFactory, fake_anthropic: FakeAnthropic, serve_review: Serve) -> Served:
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
        telegram={"token": DEFAULT_TOKEN, "allowed_users": [42]},
        review={"public_url": f"https://home.example.com{PATH}/"},
    )
    file_a_task(fake_anthropic, "Buy oat milk", "- [ ] oat milk", "Filed a task: buy oat milk")
    await chat(app, "remember to buy oat milk")
    return await serve_review(app)


@pytest.fixture(params=[False, True], ids=["path-passed-on", "path-stripped"])
async def proxied(request: pytest.FixtureRequest, served: Served) -> AsyncIterator[str]:
    """The proxy's address (its root: the page is at ``PATH`` under it)."""
    async with path_proxy(served.base, PATH, strip=request.param) as base:
        yield base


async def test_every_link_of_every_page_stays_under_the_path_and_opens(served: Served, proxied: str) -> None:
    async with httpx.AsyncClient(base_url=proxied) as client:
        signed_in = await client.get(f"{PATH}/", params={"token": served.token}, headers={"sec-fetch-mode": "navigate"})
        assert signed_in.status_code == 303 and signed_in.headers["location"] == f"{PATH}/"
        assert f"Path={PATH};" in signed_in.headers["set-cookie"]
        seen: set[str] = set()
        waiting = [f"{PATH}/"]
        while waiting:
            address = waiting.pop()
            if address in seen:
                continue
            seen.add(address)
            page = await client.get(address)
            assert page.status_code == 200, (address, page.status_code)
            if not page.headers["content-type"].startswith("text/html"):
                continue
            for link in LINK.findall(page.text):
                target = urlsplit(urljoin(address, link.replace("&amp;", "&")))
                if target.scheme in ("", "http") and not target.netloc:
                    assert target.path.startswith(f"{PATH}/"), (address, link)
                    if target.path != f"{PATH}/sign-out":  # a form's post, not a page
                        waiting.append(target.path + (f"?{target.query}" if target.query else ""))
        kinds = {urlsplit(a).path.split("/")[2] for a in seen}
        assert {"", "runs", "notes", "usage", "health", "static", "sign-in"} <= kinds, kinds
        # The path alone, without its slash, is the timeline too.
        assert (await client.get(PATH)).status_code == 200


async def test_the_mini_app_behind_a_path_signs_in_and_carries_on_under_it(
    served: Served, proxied: str, browser: Browser
) -> None:
    context = await browser.new_context(viewport={"width": 360, "height": 740})
    page = await context.new_page()
    async with page.expect_response(lambda r: r.request.method == "POST") as answer:
        await page.goto(f"{proxied}{PATH}/sign-in/telegram{fragment(signed(DEFAULT_TOKEN))}")
    assert (await answer.value).status == 204
    await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    assert page.url == f"{proxied}{PATH}/"
    await page.get_by_role("link", name="Runs", exact=True).click()
    await expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    assert page.url == f"{proxied}{PATH}/runs"
    await page.get_by_role("link", name=re.compile(r"^run [0-9a-f]{8}")).first.click()
    await expect(page.get_by_role("heading", name="Steps")).to_be_visible()
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_text("You are not signed in")).to_be_visible()
    assert page.url == f"{proxied}{PATH}/sign-in/"
    refused = await page.goto(f"{proxied}{PATH}/runs")
    assert refused is not None and refused.status == 401
    await context.close()


async def test_the_token_address_behind_a_path_leaves_the_token_out_of_the_address_bar(
    served: Served, proxied: str, browser: Browser
) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    opened = await page.goto(f"{proxied}{PATH}/runs?token={served.token}")
    assert opened is not None and opened.status == 200
    assert page.url == f"{proxied}{PATH}/runs"
    await expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    await context.close()
