"""How the review page is started and found: `vaultbot review` as a user runs it, `vaultbot run`
with the page enabled, `/review` in chat, and the token kept in the store."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from bot.app import App
from bot.bus import INBOUND, InboundMessage, OutboundMessage, Sender, outbound_topic
from bot.cli.serve import serve
from bot.runner.commands import REVIEW_OFF
from bot.store import DeadLetters
from bot.web import review_token
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import outbox, subprocess_env

AppFactory = Callable[..., Awaitable[App]]


def fetch(url: str) -> tuple[int, str]:
    """GET ``url``: the status and body, also for an error status (following a redirect, as a script does)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


SIGN_IN_LINK = re.compile(
    r"^The review page: (http://\S+/sign-in\?code=\S+) \(it signs you in once, within 5 minutes\)"
    r"\nIt opens on the machine vaultbot runs on \(127\.0\.0\.1 is that machine\), not on a phone\. .*ssh -L .*$"
)


def sign_in_link(reply: OutboundMessage, base: str) -> str:
    """The single-use link of a /review reply: to the page at ``base``, never with its token."""
    found = SIGN_IN_LINK.match(reply.text)
    assert found is not None, reply.text
    assert found.group(1).startswith(base.rstrip("/") + "/sign-in?code="), (found.group(1), base)
    return found.group(1)


async def sign_in_with(link: str) -> tuple[int, str | None, str]:
    """Open ``link`` as a browser does: the status, where it leads, and the session cookie it sets."""
    async with httpx.AsyncClient() as client:
        opened = await client.get(link)
    return opened.status_code, opened.headers.get("location"), opened.cookies.get("vaultbot_review", "")


@contextmanager
def reviewing(tmp_path: Path, **env: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`vaultbot review --port 0` in tmp_path: the process and the address it printed. Stopped
    with Ctrl-C at the end if the test did not stop it."""
    with subprocess.Popen(
        [sys.executable, "-m", "bot", "review", "--port", "0"],
        cwd=tmp_path,
        env=subprocess_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            ready, _, _ = select.select([process.stdout], [], [], 30)
            assert ready, "vaultbot review printed no address within 30 s"
            yield process, process.stdout.readline().strip()
        finally:
            if process.poll() is None:
                stop(process)


def stop(process: subprocess.Popen[str]) -> int:
    """Ctrl-C, as a user stops it; returns the exit status."""
    process.send_signal(signal.SIGINT)
    return process.wait(timeout=30)


def test_vaultbot_review_prints_its_address_keeps_its_token_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    with reviewing(tmp_path) as (process, url):
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        base, token = url.split("/?token=")
        assert fetch(base + "/")[0] == 401
        assert fetch(base + "/?token=wrong")[0] == 403
        status, body = fetch(url)
        assert status == 200 and "Timeline" in body
        assert stop(process) == 0
        assert process.stderr is not None and token not in process.stderr.read()

    with reviewing(tmp_path) as (again, second):
        assert second.split("/?token=")[1] == token
        assert stop(again) == 0

    with reviewing(tmp_path, VAULTBOT_REVIEW__TOKEN="my-own-token-0123456789") as (_, third):
        assert third.endswith("/?token=my-own-token-0123456789")
        assert fetch(third)[0] == 200


def test_a_port_already_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with reviewing(tmp_path) as (_, url):
        port = url.split(":")[2].split("/")[0]
        done = subprocess.run(
            [sys.executable, "-m", "bot", "review", "--port", port],
            cwd=tmp_path,
            env=subprocess_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"vaultbot: cannot serve the review page on 127.0.0.1:{port}: Address already in use"


async def ask(app: App, text: str) -> OutboundMessage:
    """Send ``text`` in a terminal conversation and wait (up to 10 s) for the reply the running worker queues."""
    topic = outbound_topic("terminal")
    before = len(await outbox(app))
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=text)
    async with asyncio.timeout(10):
        await app.bus.publish(INBOUND, message, conversation=message.conversation)
        while True:
            with app.bus.listen(topic) as changed:
                replies = (await outbox(app))[before:]
                if replies:
                    return replies[0]
                await changed.wait()


async def test_vaultbot_run_serves_the_page_when_enabled_and_review_in_chat_gives_its_address(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)  # what `vaultbot -v` logs
    app = await make_app(review={"enabled": True, "port": 0})
    stopping = asyncio.Event()
    announced = asyncio.Event()
    printed: list[str] = []

    def announce(url: str) -> None:
        printed.append(url)
        announced.set()

    running = asyncio.create_task(serve(app, stopping, announce=announce))
    try:
        await asyncio.wait_for(announced.wait(), 10)
        [url] = printed
        status, body = await asyncio.to_thread(fetch, url)
        assert status == 200 and "Timeline" in body
        base = url.split("?")[0]
        assert (await asyncio.to_thread(fetch, base))[0] == 401
        reply = await ask(app, "/review")
        token = url.split("token=")[1]
        assert token not in reply.text
        link = sign_in_link(reply, base)
        status, location, cookie = await sign_in_with(link)
        assert (status, location) == (303, "/") and cookie
        async with httpx.AsyncClient(base_url=base, cookies={"vaultbot_review": cookie}) as client:
            assert (await client.get("/runs")).status_code == 200
        # Once: the same link opens nothing a second time.
        assert (await sign_in_with(link))[:2] == (403, None)
    finally:
        stopping.set()
        await asyncio.wait_for(running, 30)
    assert token not in caplog.text
    assert not [r for r in caplog.records if r.name.startswith("bot") and link in r.getMessage()]


async def test_review_in_chat_says_how_to_start_the_page_when_it_is_not_served(make_app: AppFactory) -> None:
    app = await make_app()
    stopping = asyncio.Event()
    running = asyncio.create_task(serve(app, stopping, announce=lambda url: None))
    try:
        reply = await ask(app, "/review")
    finally:
        stopping.set()
        await asyncio.wait_for(running, 30)
    assert reply.text == REVIEW_OFF and "vaultbot review" in reply.text


async def test_the_token_is_generated_once_and_kept_in_the_store(make_app: AppFactory) -> None:
    app = await make_app()
    first = await review_token(app.settings, app.db)
    second = await review_token(app.settings, app.db)
    assert first == second and len(first) >= 32
    review = app.settings.review.model_copy(update={"token": SecretStr("x" * 20)})
    chosen = await review_token(app.settings.model_copy(update={"review": review}), app.db)
    assert chosen == "x" * 20


async def test_review_in_chat_gives_the_address_of_a_vaultbot_review_running_beside_the_bot_while_it_lives(
    make_app: AppFactory, tmp_path: Path
) -> None:
    # The bot and `vaultbot review` (started as a user starts it, in tmp_path) share one store.
    app = await make_app(store={"path": tmp_path / "data" / "vaultbot.db"})
    stopping = asyncio.Event()
    running = asyncio.create_task(serve(app, stopping, announce=lambda url: None))
    try:
        with reviewing(tmp_path) as (process, url):
            reply = await ask(app, "/review")
            link = sign_in_link(reply, url.split("?")[0])
            status, location, cookie = await sign_in_with(link)
            assert (status, location) == (303, "/") and cookie
            assert (await asyncio.to_thread(fetch, url))[0] == 200
            process.kill()  # no chance to say it stopped
            process.wait(timeout=10)
            reply = await ask(app, "/review")
            assert reply.text == REVIEW_OFF

        with reviewing(tmp_path) as (process, url):
            # The page started again (with the same token): a link made before it started opens nothing.
            earlier = link.replace(link.split("/sign-in")[0], url.split("/?")[0])
            assert (await sign_in_with(earlier))[0] == 403
            link = sign_in_link(await ask(app, "/review"), url.split("?")[0])
            assert (await sign_in_with(link))[0] == 303
            assert stop(process) == 0
        assert (await ask(app, "/review")).text == REVIEW_OFF
    finally:
        stopping.set()
        await asyncio.wait_for(running, 30)


SECRETS = {
    "anthropic_api_key": "sk-ant-health-secret-1",
    "transcribe": "transcribe-secret-2",
    "review": "review-secret-token-4",
}


async def test_the_health_page_shows_the_running_bots_configuration_and_how_to_retry_each_dead_letter(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    store = tmp_path / "data" / "vaultbot.db"
    with reviewing(tmp_path) as (_, url):
        base = url.split("?")[0]
        status, body = await asyncio.to_thread(fetch, f"{base}health?format=json&token={url.split('token=')[1]}")
        assert status == 200 and json.loads(body)["bot"] is None
        assert "No bot has run yet" in (await asyncio.to_thread(fetch, url.replace("/?", "/health?")))[1]

        # The bot runs with settings the review process (capture mode, the machine's zone) does not have.
        bot = await make_app(
            store={"path": store},
            anthropic_api_key=SECRETS["anthropic_api_key"],
            anthropic_base_url=fake_anthropic.base_url,
            model={"name": "claude-health-test", "sdk_max_retries": 0},
            budget={"daily_usd": 3.5},
            timezone="Pacific/Auckland",
            transcribe={"base_url": "http://127.0.0.1:9/v1", "api_key": SECRETS["transcribe"]},
            review={"token": SECRETS["review"]},
        )
        stopping = asyncio.Event()
        running = asyncio.create_task(serve(bot, stopping, announce=lambda url: None))
        try:
            fake_anthropic.enqueue(api.status(400, "invalid_request_error"))
            message = InboundMessage(
                channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="hi"
            )
            async with asyncio.timeout(10):
                await bot.bus.publish(INBOUND, message, conversation=message.conversation)
                while not await bot.bus.dead_letters(INBOUND):
                    with bot.bus.listen(INBOUND) as changed:
                        if not await bot.bus.dead_letters(INBOUND):
                            await changed.wait()
            [letter] = await DeadLetters(bot.db).waiting()
        finally:
            stopping.set()
            await asyncio.wait_for(running, 30)

        status, body = await asyncio.to_thread(fetch, f"{base}health?format=json&token={url.split('token=')[1]}")
        page = (await asyncio.to_thread(fetch, url.replace("/?", "/health?")))[1]
    assert status == 200
    shown = json.loads(body)
    assert shown["bot"]["config"] == {
        "mode": "assistant",
        "model": "claude-health-test",
        "channels": [],
        "budget_daily_usd": 3.5,
        "timezone": "Pacific/Auckland",
        "transcription": True,
        "review_page": False,
        "mcp_servers": [],
    }
    for text in ("assistant", "claude-health-test", "$3.50", "Pacific/Auckland"):
        assert text in page
    assert "capture mode" not in page.lower()
    [dead] = shown["dead_letters"]
    # The id vaultbot retry takes is the run that filed the dead letter.
    assert dead["id"] == message.id and dead["retry"] == f"vaultbot retry {letter.run_id[:8]}"
    assert f'<code class="command">vaultbot retry {letter.run_id[:8]}</code>' in page
    for secret in SECRETS.values():
        assert secret not in body and secret not in page
        assert secret not in (await bot.db.fetchone("SELECT config FROM bot_config"))["config"]
