"""Promises the review page keeps on every address it answers, taken from its own route table so
that a route added later is covered without anyone remembering to: nothing of the page without
the token (none, or a wrong one in the query or the cookie), and the security headers on every
response, errors included. The Mini App's door (the one mount of routes in the table) is open
without the token, and shows nothing of the page and sets no cookie without Telegram's init data."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from bot.app import App
from bot.web import routes
from bot.web.access import BAD_TOKEN, COOKIE, DOOR, NO_TOKEN, SECURITY_HEADERS
from tests.web.conftest import Served

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[[App], Awaitable[Served]]

UNKNOWN = "/no-such-page"
_PARAM = re.compile(r"\{([^}:]+)(?::[^}]+)?\}")


def addresses(routes: list[BaseRoute], prefix: str = "") -> list[str]:
    """One address for every route (its parameters filled in) and every static file under ``routes``."""
    found: list[str] = []
    for route in routes:
        if isinstance(route, Route):
            path = _PARAM.sub(lambda m: "Inbox/a note.md" if m.group(1) == "path" else "0123abcd", route.path)
            found.append(prefix + path)
        elif isinstance(route, Mount) and isinstance(route.app, StaticFiles):
            assert route.app.directory is not None
            directory = Path(route.app.directory)
            found.extend(f"{prefix}{route.path}/{file.name}" for file in sorted(directory.iterdir()))
        elif isinstance(route, Mount) and prefix + route.path == DOOR:
            found.extend(addresses(route.routes, prefix + route.path))
        else:
            raise AssertionError(f"a route this test does not know how to visit: {route!r}")
    return found


def gated(paths: list[str]) -> list[str]:
    return [p for p in paths if not p.startswith(DOOR + "/")]


EVERY = addresses(routes())
ADDRESSES = [*gated(EVERY), UNKNOWN]
DOOR_ADDRESSES = [p for p in EVERY if p not in ADDRESSES]


@pytest.fixture
async def served(make_app: AppFactory, serve_review: Serve) -> Served:
    return await serve_review(await make_app())


def assert_secured(response: httpx.Response) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, (response.request.url.path, response.status_code, name)


def assert_refused(response: httpx.Response, status: int, text: str) -> None:
    """Refused with the one line that says why, and nothing of the page."""
    assert response.status_code == status, response.request.url
    assert response.text == text, response.request.url
    assert response.headers["content-type"].startswith("text/plain")
    assert "set-cookie" not in response.headers
    assert_secured(response)


@pytest.mark.parametrize("path", ADDRESSES)
async def test_without_the_right_token_no_address_gives_anything_of_the_page(served: Served, path: str) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        assert_refused(await client.get(path), 401, NO_TOKEN)
        assert_refused(await client.get(path, params={"format": "json"}), 401, NO_TOKEN)
        assert_refused(await client.get(path, params={"token": "not-the-token"}), 403, BAD_TOKEN)
        assert_refused(await client.get(path, params={"token": ""}), 403, BAD_TOKEN)
        assert_refused(await client.get(path, headers={"cookie": f"{COOKIE}=not-the-cookie"}), 403, BAD_TOKEN)
        # The token itself is not the cookie: the cookie holds a value derived from it.
        assert_refused(await client.get(path, headers={"cookie": f"{COOKIE}={served.token}"}), 403, BAD_TOKEN)
        assert_refused(await client.post(path, params={"token": "not-the-token"}), 403, BAD_TOKEN)


@pytest.mark.parametrize("path", ADDRESSES)
async def test_every_response_carries_the_security_headers(served: Served, path: str) -> None:
    async with httpx.AsyncClient(base_url=served.base) as client:
        first = await client.get(path, params={"token": served.token})
        assert first.status_code in (200, 404), (path, first.status_code)
        assert_secured(first)
        # Then with the cookie the first visit set, as a browser carries on.
        assert client.cookies.get(COOKIE)
        for response in (
            await client.get(path),
            await client.get(path, params={"format": "json"}),
            await client.post(path),
            await client.get(path + "/does-not-exist"),
        ):
            assert response.status_code < 500, (path, response.status_code)
            assert_secured(response)


async def test_the_door_is_the_only_open_address_and_shows_nothing_of_the_page(
    make_app: AppFactory, serve_review: Serve
) -> None:
    app = await make_app()
    await app.store.add_interaction(conversation="telegram:42", category="note", summary="SECRET-SUMMARY", run_id=None)
    served = await serve_review(app)
    assert DOOR_ADDRESSES == [f"{DOOR}/", f"{DOOR}/session", f"{DOOR}/assets/door.css", f"{DOOR}/assets/miniapp.js"]
    async with httpx.AsyncClient(base_url=served.base) as client:
        for path in DOOR_ADDRESSES:
            for response in (await client.get(path), await client.post(path, content=b"")):
                assert "SECRET-SUMMARY" not in response.text, path
                assert "set-cookie" not in response.headers, path
                assert response.status_code in (200, 403, 405), (path, response.status_code)
                assert_secured(response)
        # Not set up as a Mini App (no public address, no Telegram token): the door lets nobody in.
        signing_in = await client.post(f"{DOOR}/session", content=b"user=%7B%22id%22%3A42%7D&auth_date=1&hash=00")
        assert signing_in.status_code == 403 and "not set up as a Telegram Mini App" in signing_in.text
        assert "set-cookie" not in signing_in.headers
        assert (await client.get("/")).status_code == 401
