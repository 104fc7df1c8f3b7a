"""Promises the review page keeps on every address it answers, pinned with literal expectations from
DESIGN (`vaultbot review`; "Review in Telegram (Mini App)"; Guarantees, "What is private stays private"),
never with the code's own constants: nothing of the page without the token or a session (401 or 403,
not a redirect), under no host name but its own, the security headers on every answer, refusals
included, and framing by Telegram Web only for the Mini App's pages.

The addresses come from the route table, so a route added later is covered without anyone remembering
to, and the few open ones (signing in and out) are listed here by hand."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from bot.app import App
from bot.web import routes
from tests.fakes.telegram_server import DEFAULT_TOKEN
from tests.web.conftest import Served

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[..., Awaitable[Served]]

COOKIE = "vaultbot_review"
PUBLIC_HOST = "review.example.com"
UNKNOWN = "/no-such-page"
# Addresses no route has that start like the open ones: gated like any other.
LOOK_ALIKES = ["/sign-inx", "/sign-in.html", "/sign-outx", "/sign-out/x"]
# The one place the page may be framed: Telegram Web, and only the pages at the Mini App's (public) address.
CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors {}"
)
LOCAL_HEADERS = {
    "content-security-policy": CSP.format("'none'"),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    "cross-origin-resource-policy": "same-origin",
}
MINI_APP_HEADERS = {
    **{k: v for k, v in LOCAL_HEADERS.items() if k != "x-frame-options"},
    "content-security-policy": CSP.format("https://web.telegram.org"),
}
# Open without a session, and showing nothing of the page: signing in (a link, Telegram's door) and out.
OPEN = [
    "/sign-in",
    "/sign-in/",
    "/sign-in/telegram",
    "/sign-in/assets/door.css",
    "/sign-in/assets/miniapp.js",
    "/sign-out",
]
FOREIGN_HOSTS = [
    "evil.example",
    "evil.example:8765",
    "127.0.0.1.evil.example",
    "localhost.evil.example",
    "review.example.com.evil.example",
    "10.0.0.1",
    "",
]
_PARAM = re.compile(r"\{([^}:]+)(?::[^}]+)?\}")


def addresses(table: list[BaseRoute], prefix: str = "") -> list[str]:
    """One address for every route (its parameters filled in) and every static file under ``table``."""
    found: list[str] = []
    for route in table:
        if isinstance(route, Route):
            path = _PARAM.sub(lambda m: "Inbox/a note.md" if m.group(1) == "path" else "0123abcd", route.path)
            found.append(prefix + path)
        elif isinstance(route, Mount) and isinstance(route.app, StaticFiles):
            assert route.app.directory is not None
            directory = Path(route.app.directory)
            found.extend(f"{prefix}{route.path}/{file.name}" for file in sorted(directory.iterdir()))
        elif isinstance(route, Mount):
            found.extend(addresses(route.routes, prefix + route.path))
        else:
            raise AssertionError(f"a route this test does not know how to visit: {route!r}")
    return list(dict.fromkeys(found))


EVERY = addresses(routes())
GATED = [*(p for p in EVERY if p not in OPEN), UNKNOWN, *LOOK_ALIKES]


@pytest.fixture
async def served(make_app: AppFactory, serve_review: Serve) -> Served:
    return await serve_review(await make_app())


@pytest.fixture
async def public(make_app: AppFactory, serve_review: Serve) -> Served:
    """The page set up as a Mini App at https://review.example.com."""
    app = await make_app(
        telegram={"token": DEFAULT_TOKEN, "allowed_users": [42]}, review={"public_url": f"https://{PUBLIC_HOST}"}
    )
    return await serve_review(app)


def assert_headers(response: httpx.Response, expected: dict[str, str]) -> None:
    where = (response.request.url.path, response.request.headers.get("host"), response.status_code)
    for name, value in expected.items():
        assert response.headers.get(name) == value, (*where, name)
    if "x-frame-options" not in expected:
        assert "x-frame-options" not in response.headers, where


def assert_refused(response: httpx.Response, status: int) -> None:
    """Refused with one line of plain text, nothing of the page, no session, every header."""
    assert response.status_code == status, (response.request.url, response.status_code)
    assert response.headers["content-type"].startswith("text/plain")
    if response.request.method != "HEAD":
        assert response.text.startswith(f"{status}: ") and response.text.count("\n") == 1, response.text
    assert "set-cookie" not in response.headers
    assert_headers(response, LOCAL_HEADERS)


def test_the_open_addresses_are_only_signing_in_and_out() -> None:
    assert sorted(p for p in EVERY if p in OPEN) == sorted(OPEN)
    # The Mini App's door is apart from the webhook's usual /telegram (README), so both share a host.
    assert not [p for p in EVERY if p == "/telegram" or p.startswith("/telegram/")]


@pytest.mark.parametrize("path", GATED)
async def test_without_the_right_token_or_a_session_no_address_gives_anything_of_the_page(
    served: Served, path: str
) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        assert_refused(await client.get(path), 401)
        assert_refused(await client.get(path, params={"format": "json"}), 401)
        assert_refused(await client.head(path), 401)
        assert_refused(await client.get(path, params={"token": "not-the-token"}), 403)
        assert_refused(await client.get(path, params={"token": ""}), 403)
        assert_refused(await client.get(path, params={"token": served.token[:-1]}), 403)
        assert_refused(await client.get(path, headers={"cookie": f"{COOKIE}=not-a-session"}), 403)
        # The token itself is not a session: the cookie holds a signed session id.
        assert_refused(await client.get(path, headers={"cookie": f"{COOKIE}={served.token}"}), 403)
        assert_refused(await client.post(path, params={"token": "not-the-token"}), 403)
        # A browser's visit without the token is refused too, not sent anywhere: with a page that says why.
        page = await client.get(path, headers={"sec-fetch-mode": "navigate"})
        assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
        assert "Not signed in." in page.text and "set-cookie" not in page.headers
        assert_headers(page, LOCAL_HEADERS)


@pytest.mark.parametrize("path", [*EVERY, UNKNOWN])
async def test_every_answer_carries_the_security_headers(served: Served, path: str) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        first = await client.get(path, params={"token": served.token})
        assert first.status_code < 500, (path, first.status_code)
        assert_headers(first, LOCAL_HEADERS)
        await client.get("/", params={"token": served.token})  # signed in, as a browser carries on
        assert client.cookies.get(COOKIE), path
        for response in (
            await client.get(path),
            await client.get(path, params={"format": "json"}),
            await client.post(path),
            await client.get(path + "/does-not-exist"),
            await client.get(path, params={"token": served.token}, headers={"sec-fetch-mode": "navigate"}),
        ):
            assert response.status_code < 500, (path, response.status_code)
            assert_headers(response, LOCAL_HEADERS)


@pytest.mark.parametrize("path", [*EVERY, UNKNOWN])
async def test_only_the_mini_apps_pages_may_be_framed_and_only_by_telegram_web(public: Served, path: str) -> None:
    async with httpx.AsyncClient(base_url=public.base) as client:
        at_public = {"host": PUBLIC_HOST, "x-forwarded-proto": "https"}
        for response in (
            await client.get(path, headers=at_public),
            await client.get(path, params={"token": public.token}, headers=at_public),
        ):
            assert_headers(response, MINI_APP_HEADERS)
        # The same page at 127.0.0.1 is not the Mini App: no frame at all.
        assert_headers(await client.get(path, params={"token": public.token}), LOCAL_HEADERS)


@pytest.mark.parametrize("path", [*EVERY, UNKNOWN])
async def test_a_host_name_not_the_pages_own_is_refused_on_every_address(public: Served, path: str) -> None:
    port = public.base.rsplit(":", 1)[1]
    async with httpx.AsyncClient(base_url=public.base) as client:
        for host in FOREIGN_HOSTS:
            # With the right token too: a site whose name points at 127.0.0.1 gets nothing, not even a session.
            for response in (
                await client.get(path, headers={"host": host}),
                await client.get(path, params={"token": public.token}, headers={"host": host}),
                await client.post(path, params={"token": public.token}, headers={"host": host}),
            ):
                assert_refused(response, 403)
                assert "host name" in response.text
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LocalHost:{port}", PUBLIC_HOST):
            response = await client.get(path, params={"token": public.token}, headers={"host": host})
            assert response.status_code < 500 and "host name" not in response.text, (path, host, response.status_code)


async def test_a_request_without_a_host_header_is_refused(served: Served) -> None:
    port = int(served.base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /?token={served.token} HTTP/1.0\r\n\r\n".encode())
    await writer.drain()
    answer = (await reader.read()).decode()
    writer.close()
    assert answer.startswith("HTTP/1.1 403"), answer[:80]
    assert "set-cookie" not in answer.lower()


@pytest.mark.parametrize("path", [p for p in GATED if p != UNKNOWN])
async def test_the_token_starts_a_session_and_a_browsers_visit_leaves_the_token_out_of_the_address(
    served: Served, path: str
) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        visit = await client.get(
            path, params={"format": "json", "token": served.token}, headers={"sec-fetch-mode": "navigate"}
        )
        assert visit.status_code == 303, (path, visit.status_code)
        assert visit.headers["location"] == httpx.URL(path).raw_path.decode() + "?format=json"
        assert served.token not in visit.headers["location"]
        session = visit.cookies[COOKIE]
        assert session and served.token not in session
    # A script (no navigation) is answered at once, as `vaultbot review`'s printed address promises.
    async with httpx.AsyncClient(base_url=served.base) as client:
        answered = await client.get(path, params={"token": served.token})
        assert answered.status_code in (200, 404, 405) and answered.cookies[COOKIE]
    async with httpx.AsyncClient(base_url=served.base, cookies={COOKIE: session}) as client:
        assert (await client.get(path)).status_code in (200, 404, 405)


async def test_a_post_from_another_origin_is_refused(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        await client.get("/", params={"token": served.token})
        for origin in ("https://evil.example", "null", served.base.replace("127.0.0.1", "localhost")):
            refused = await client.post("/sign-out", headers={"origin": origin})
            assert_refused(refused, 403)
        assert (await client.get("/runs")).status_code == 200  # still signed in
        signed_out = await client.post("/sign-out", headers={"origin": served.base})
        assert signed_out.status_code == 303 and signed_out.headers["location"] == "/sign-in/"
