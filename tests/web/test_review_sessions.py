"""How a person gets into the review page and out again, on a clock the test moves (DESIGN, Guarantees:
"a review link sent in chat is single-use and short-lived, the session it opens expires, and tokens are
long enough not to be guessed"): the sign-in link of /review opens one session, once, for 5 minutes; a
session lasts 12 hours, ends on signing out and when the page restarts; wrong tokens, links and init
data are slowed down to one check every 2 seconds after the first 10; Telegram's init data signs in
once, fresh, and only when the page itself posts it."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from urllib.parse import quote

import httpx
import pytest
from playwright.async_api import Browser, expect

from bot.app import App
from bot.runner import ReviewLink
from tests.fakes.telegram_server import DEFAULT_TOKEN
from tests.web.conftest import FakeTime, Served
from tests.web.telegram_init_data import signed

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[..., Awaitable[Served]]

COOKIE = "vaultbot_review"
PUBLIC = "https://review.example.com"


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
async def app(make_app: AppFactory) -> App:
    return await make_app(telegram={"token": DEFAULT_TOKEN, "allowed_users": [42]}, review={"public_url": PUBLIC})


@pytest.fixture
async def served(app: App, serve_review: Serve, clock: FakeTime) -> Served:
    return await serve_review(app, clock)


async def link_to(served: Served, clock: FakeTime, token: str | None = None) -> str:
    """A sign-in link as /review in chat makes it (for the page this process serves), at the test's time."""
    text = await ReviewLink(page=(served.base + "/", token or served.token), clock=clock).find(None)  # type: ignore[arg-type]
    assert text is not None
    return text.split(" ")[0]


async def open_link(link: str) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(link)


async def pages_open_with(served: Served, session: str) -> bool:
    async with httpx.AsyncClient(base_url=served.base, cookies={COOKIE: session}) as client:
        return (await client.get("/runs")).status_code == 200


async def test_a_sign_in_link_opens_one_session_once(served: Served, clock: FakeTime) -> None:
    link = await link_to(served, clock)
    assert served.token not in link
    opened = await open_link(link)
    assert opened.status_code == 303 and opened.headers["location"] == "/"
    assert await pages_open_with(served, opened.cookies[COOKIE])
    again = await open_link(link)
    assert again.status_code == 403 and "used already" in again.text and "set-cookie" not in again.headers
    # However its code is spelled in the address.
    assert (await open_link(link.replace("code=", "code=%20"))).status_code == 403


@pytest.mark.parametrize(
    ("made", "used", "opens"),
    [(0, 299, True), (0, 301, False), (-1, 0, False), (2, 2, True)],
    ids=["within-5-minutes", "after-5-minutes", "made-before-the-page-started", "made-while-it-serves"],
)
async def test_a_sign_in_link_lasts_5_minutes_from_a_page_that_was_already_serving(
    served: Served, clock: FakeTime, made: float, used: float, opens: bool
) -> None:
    start = clock.now
    clock.now = start + made
    link = await link_to(served, clock)
    clock.now = start + used
    answer = await open_link(link)
    assert (answer.status_code == 303) is opens, answer.text
    if not opens:
        assert answer.status_code == 403 and "/review" in answer.text


@pytest.mark.parametrize(
    "code",
    ["", "x", "a.b.c", "1.2", "ffffffffffff.00.00", "..", "%00", "é" * 50, "a" * 5000],
)
async def test_a_forged_or_garbled_link_opens_nothing(served: Served, code: str) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        answer = await client.get("/sign-in", params={"code": code})
    assert answer.status_code == 403 and "set-cookie" not in answer.headers, answer.text


async def test_a_link_made_with_another_token_opens_nothing(served: Served, clock: FakeTime) -> None:
    answer = await open_link(await link_to(served, clock, token="another-page-token-0123456789"))
    assert answer.status_code == 403 and "not a sign-in link of this page" in answer.text


async def test_a_session_lasts_12_hours_and_no_longer(served: Served, clock: FakeTime) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        started = await client.get("/", params={"token": served.token})
    session = started.cookies[COOKIE]
    assert "max-age=43200" in started.headers["set-cookie"].lower()
    clock.advance(12 * 3600 - 1)
    assert await pages_open_with(served, session)
    clock.advance(1)
    async with httpx.AsyncClient(base_url=served.base, cookies={COOKIE: session}) as client:
        ended = await client.get("/runs")
    assert ended.status_code == 403 and "session has ended" in ended.text


async def test_signing_out_ends_the_session_even_for_a_copy_of_its_cookie(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.base) as elsewhere:
        other = (await elsewhere.get("/", params={"token": served.token})).cookies[COOKIE]
    async with httpx.AsyncClient(base_url=served.base) as client:
        await client.get("/", params={"token": served.token})
        session = client.cookies[COOKIE]
        out = await client.post("/sign-out", headers={"origin": served.base})
        assert out.status_code == 303 and out.headers["location"] == "/sign-in/"
        assert "max-age=0" in out.headers["set-cookie"].lower()
        assert (await client.get("/runs")).status_code == 401  # the browser forgot it
        how = await client.get("/sign-in/")
        assert how.status_code == 200 and "not signed in" in how.text and "oat" not in how.text
    assert not await pages_open_with(served, session)  # a copy kept elsewhere opens nothing either
    assert await pages_open_with(served, other)  # another session is not signed out


async def test_a_restart_of_the_page_ends_every_session(app: App, serve_review: Serve) -> None:
    first = await serve_review(app)
    async with httpx.AsyncClient(base_url=first.base) as client:
        session = (await client.get("/", params={"token": first.token})).cookies[COOKIE]
    second = await serve_review(app)
    assert await pages_open_with(first, session)
    assert not await pages_open_with(second, session)


async def test_wrong_tokens_are_slowed_down_to_one_every_2_seconds_after_10(served: Served, clock: FakeTime) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        session = (await client.get("/", params={"token": served.token})).cookies[COOKIE]
        for guess in range(10):
            assert (await client.get("/", params={"token": f"guess-{guess}"})).status_code == 403
        held = await client.get("/", params={"token": "guess-10"})
        assert held.status_code == 429 and held.headers["retry-after"] == "2"
        assert "set-cookie" not in held.headers
        # Not even the right token is checked now: a guesser learns nothing while held back...
        right = await client.get("/", params={"token": served.token})
        assert right.status_code == 429 and "set-cookie" not in right.headers
    # ...while a signed-in person is not held up, nor is a signed sign-in link or Telegram's init data
    # (nothing to guess there): the owner's fresh /review link and the Mini App open all the same.
    assert await pages_open_with(served, session)
    assert (await open_link(await link_to(served, clock))).status_code == 303
    async with httpx.AsyncClient(base_url=served.base) as client:
        posted = await client.post("/sign-in/telegram", content=signed(DEFAULT_TOKEN), headers={"origin": served.base})
        assert posted.status_code == 204
    clock.advance(2)
    async with httpx.AsyncClient(base_url=served.base) as client:
        assert (await client.get("/", params={"token": "guess-11"})).status_code == 403
        assert (await client.get("/", params={"token": "guess-12"})).status_code == 429
        clock.advance(20)
        assert (await client.get("/", params={"token": served.token})).status_code == 200
        for guess in range(10):
            assert (await client.get("/", params={"token": f"more-{guess}"})).status_code == 403
        assert (await client.get("/", params={"token": "more-10"})).status_code == 429


async def test_wrong_tokens_from_one_client_do_not_hold_up_another(served: Served) -> None:
    guesser = httpx.AsyncHTTPTransport(local_address="127.0.0.2")  # another address of this machine's loopback
    async with httpx.AsyncClient(base_url=served.base, transport=guesser) as client:
        for guess in range(11):
            await client.get("/", params={"token": f"guess-{guess}"})
        assert (await client.get("/", params={"token": served.token})).status_code == 429
    async with httpx.AsyncClient(base_url=served.base) as owner:
        assert (await owner.get("/", params={"token": served.token})).status_code == 200


async def test_init_data_signed_before_a_restart_of_the_page_is_not_taken_after(
    app: App, serve_review: Serve, clock: FakeTime
) -> None:
    init_data = signed(DEFAULT_TOKEN, auth_date=int(clock.now))
    first = await serve_review(app, clock)
    async with httpx.AsyncClient(base_url=first.base, headers={"origin": first.base}) as client:
        assert (await client.post("/sign-in/telegram", content=init_data)).status_code == 204
    clock.advance(60)
    second = await serve_review(app, clock)
    async with httpx.AsyncClient(base_url=second.base, headers={"origin": second.base}) as client:
        replayed = await client.post("/sign-in/telegram", content=init_data)
        assert replayed.status_code == 403 and "signed before the page started" in replayed.text
        fresh = await client.post("/sign-in/telegram", content=signed(DEFAULT_TOKEN, auth_date=int(clock.now)))
        assert fresh.status_code == 204


async def test_wrong_links_and_init_data_count_as_wrong_tokens(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        for guess in range(5):
            assert (await client.get("/sign-in", params={"code": f"guess-{guess}"})).status_code == 403
        for user in range(5):
            forged = signed(DEFAULT_TOKEN, user_id=1000 + user)
            answer = await client.post("/sign-in/telegram", content=forged, headers={"origin": served.base})
            assert answer.status_code == 403
        assert (await client.get("/", params={"token": "one-more"})).status_code == 429


async def test_init_data_signs_in_once_however_it_is_spelled(served: Served) -> None:
    init_data = signed(DEFAULT_TOKEN)
    async with httpx.AsyncClient(base_url=served.base, headers={"origin": served.base}) as client:
        first = await client.post("/sign-in/telegram", content=init_data)
        assert first.status_code == 204 and first.cookies[COOKIE]
        for replay in (init_data, init_data.replace("%22", '"'), "&".join(reversed(init_data.split("&")))):
            again = await client.post("/sign-in/telegram", content=replay)
            assert again.status_code == 403 and "signed in already" in again.text
            assert "set-cookie" not in again.headers


async def test_init_data_older_than_5_minutes_opens_nothing(served: Served, clock: FakeTime) -> None:
    clock.advance(10 * 60)  # the page has served for a while
    async with httpx.AsyncClient(base_url=served.base, headers={"origin": served.base}) as client:
        fresh = signed(DEFAULT_TOKEN, auth_date=int(clock.now) - 5 * 60 + 1)
        assert (await client.post("/sign-in/telegram", content=fresh)).status_code == 204
        stale = signed(DEFAULT_TOKEN, auth_date=int(clock.now) - 5 * 60 - 1)
        refused = await client.post("/sign-in/telegram", content=stale)
        assert refused.status_code == 403 and "more than 5 minutes old" in refused.text


@pytest.mark.parametrize(
    "origin",
    [None, "https://evil.example", "null", "http://localhost", f"{PUBLIC}.evil.example", "https://web.telegram.org"],
)
async def test_init_data_is_taken_only_from_the_pages_own_origin(served: Served, origin: str | None) -> None:
    headers = {} if origin is None else {"origin": origin}
    async with httpx.AsyncClient(base_url=served.base) as client:
        answer = await client.post("/sign-in/telegram", content=signed(DEFAULT_TOKEN), headers=headers)
        assert answer.status_code == 403 and "set-cookie" not in answer.headers
        # The page's own origins: as addressed, or its public address behind a proxy that sets another Host.
        for own in (served.base, PUBLIC):
            again = await client.post(
                "/sign-in/telegram", content=signed(DEFAULT_TOKEN, extra={"query_id": own}), headers={"origin": own}
            )
            assert again.status_code == 204, (own, again.text)


async def test_the_chats_link_and_the_page_agree_on_the_time_they_keep(served: Served) -> None:
    # The link /review sends is made on the real clock; the page opened on the test's (now).
    review = ReviewLink(page=(served.base + "/", served.token), clock=time.time)
    text = await review.find(None)  # type: ignore[arg-type]
    assert text is not None
    link, where = text.split("\n")
    assert link.endswith(" (it signs you in once, within 5 minutes)")
    # The page listens on this machine's loopback address: the link says so, and how to reach it.
    assert where.startswith("It opens on the machine vaultbot runs on (127.0.0.1 is that machine), not on a phone.")
    assert "VAULTBOT_REVIEW__PUBLIC_URL" in where and "ssh -L" in where
    assert text.startswith(f"{served.base}/sign-in?code=") and served.token not in text
    assert quote(served.token, safe="") not in text
    assert (await open_link(text.split(" ")[0])).status_code == 303


async def test_in_a_browser_the_link_from_chat_opens_the_page_once_and_sign_out_closes_it(
    served: Served, clock: FakeTime, browser: Browser
) -> None:
    link = await link_to(served, clock)
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(link)
    await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    assert page.url == served.base + "/"  # the code is gone from the address bar
    await page.get_by_role("link", name="Runs", exact=True).click()
    await expect(page.get_by_role("heading", name="Runs")).to_be_visible()

    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_text("You are not signed in to the review page.")).to_be_visible()
    assert [c for c in await context.cookies() if c["name"] == COOKIE] == []
    again = await page.goto(served.base + "/runs")
    assert again is not None and again.status == 401
    # Not a bare line: a page of the review page's own look, saying what to do.
    await expect(page.get_by_role("heading", name="vaultbot review")).to_be_visible()
    await expect(page.get_by_role("alert")).to_contain_text("Not signed in. This page needs its access token")
    assert await page.locator("code").first.text_content() == "vaultbot review"
    assert await page.evaluate("document.styleSheets.length && document.styleSheets[0].cssRules.length") > 0
    wrong = await page.goto(served.base + "/?token=not-the-token")
    assert wrong is not None and wrong.status == 403
    await expect(page.get_by_role("alert")).to_contain_text("Not allowed. That access token is not this page's")
    # The link from chat was for one visit: it opens nothing now.
    used = await page.goto(link)
    assert used is not None and used.status == 403
    await expect(page.locator("body")).to_contain_text("used already")
    await context.close()
