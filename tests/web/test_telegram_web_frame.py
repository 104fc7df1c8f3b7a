"""Telegram Web (https://web.telegram.org) shows a Mini App in a frame of its own page. In a real Chromium,
over real TLS (a certificate made for the test with openssl, Chromium told to map review.example.com to
the page), the review page opens inside Telegram Web's frame and signs in there; framed by any other
site it does not load at all."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import uvicorn
from playwright.async_api import Browser, Page, Route, async_playwright

from bot.app import App
from bot.web import review_page, review_token
from tests.fakes.telegram_server import DEFAULT_TOKEN
from tests.web.conftest import CHROMIUM
from tests.web.telegram_init_data import fragment, signed

AppFactory = Callable[..., Awaitable[App]]

PUBLIC = "review.example.com"


def certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``PUBLIC``, made with openssl."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is not installed, and this test makes its certificate with it: apt-get install openssl")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", f"/CN={PUBLIC}", "-addext", f"subjectAltName=DNS:{PUBLIC}"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return cert, key


@asynccontextmanager
async def served_over_tls(app: App, folder: Path) -> AsyncIterator[int]:
    """The page as `vaultbot run` would serve it behind an HTTPS proxy, on a free port; yields the port."""
    cert, key = certificate(folder)
    token = await review_token(app.settings, app.db)
    async with review_page(app.settings, token) as page:
        sock = socket.create_server(("127.0.0.1", 0))
        config = uvicorn.Config(page, ssl_certfile=str(cert), ssl_keyfile=str(key), log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            yield sock.getsockname()[1]
        finally:
            server.should_exit = True
            await asyncio.wait_for(serving, 10)
            sock.close()


@asynccontextmanager
async def chromium_mapping(port: int) -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=shutil.which("chromium") or CHROMIUM,
            # The page really is on 127.0.0.1 here; for Chromium, as in life, it is a public site's.
            args=[
                "--no-sandbox",
                f"--host-resolver-rules=MAP {PUBLIC} 127.0.0.1:{port}",
                "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests",
            ],
        )
        try:
            yield browser
        finally:
            await browser.close()


async def framing_site(page: Page, site: str) -> None:
    """``site`` answers with a page that frames the Mini App, as Telegram Web does."""
    url = f"https://{PUBLIC}/sign-in/telegram{fragment(signed(DEFAULT_TOKEN))}"

    async def answer(route: Route) -> None:
        await route.fulfill(content_type="text/html", body=f'<h1>{site}</h1><iframe src="{url}"></iframe>')

    await page.route(f"{site}/", answer)


@pytest.fixture
async def app(make_app: AppFactory) -> App:
    return await make_app(
        telegram={"token": DEFAULT_TOKEN, "allowed_users": [42]}, review={"public_url": f"https://{PUBLIC}"}
    )


async def test_telegram_web_frames_the_mini_app_which_signs_in_inside_the_frame(app: App, tmp_path: Path) -> None:
    async with served_over_tls(app, tmp_path) as port, chromium_mapping(port) as browser:
        context = await browser.new_context(ignore_https_errors=True)
        page = await context.new_page()
        await framing_site(page, "https://web.telegram.org")
        async with page.expect_response(lambda r: r.request.method == "POST") as signed_in:
            await page.goto("https://web.telegram.org/")
        assert (await signed_in.value).status == 204
        frame = page.frame_locator("iframe")
        await frame.get_by_role("heading", name="Timeline").wait_for(timeout=15_000)
        await frame.get_by_role("link", name="Runs", exact=True).click()
        await frame.get_by_role("heading", name="Runs").wait_for(timeout=15_000)
        await context.close()


async def test_any_other_site_cannot_frame_the_mini_app(app: App, tmp_path: Path) -> None:
    async with served_over_tls(app, tmp_path) as port, chromium_mapping(port) as browser:
        context = await browser.new_context(ignore_https_errors=True)
        page = await context.new_page()
        await framing_site(page, "https://evil.example")
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        blocked = asyncio.get_running_loop().create_future()
        page.on("console", lambda m: blocked.done() or "frame-ancestors" not in m.text or blocked.set_result(m.text))
        await page.goto("https://evil.example/")
        assert "web.telegram.org" in await asyncio.wait_for(blocked, 15)
        assert posts == []  # its script never ran: no sign-in
        await context.close()
