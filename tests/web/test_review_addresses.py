"""Addresses a person or a browser reaches for: a run by the 8 characters every page shows (any unique
start of 6 or more, as `vaultbot runs show` takes), and the icon browsers ask for at /favicon.ico."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx

from bot.app import App
from tests.web.conftest import Served

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[..., Awaitable[Served]]

IDS = ["abcdef12" + "0" * 24, "abcdef34" + "0" * 24, "99887766" + "1" * 24]


async def test_a_run_opens_at_any_unique_start_of_6_or_more_characters(
    make_app: AppFactory, serve_review: Serve
) -> None:
    app = await make_app()
    for run_id in IDS:
        await app.store.start_run(run_id, conversation="terminal:ann", inbound_id=None, model="m", mode="assistant")
        await app.store.add_step(
            run_id, kind="event", name="note", input={}, output={"said": run_id}, is_error=False, duration_ms=1.0
        )
    served = await serve_review(app)
    async with httpx.AsyncClient(base_url=served.base, params={"token": served.token}) as client:
        for shown in (IDS[0][:8], IDS[0][:7].upper(), IDS[2][:6], IDS[2][:8], IDS[2]):
            answer = await client.get(f"/runs/{shown}", params={"format": "json"})
            assert answer.status_code == 200, shown
            assert answer.json()["run"]["id"] in IDS[0::2] and answer.json()["run"]["id"].startswith(shown.lower())
        page = await client.get(f"/runs/{IDS[1][:8]}")
        assert page.status_code == 200 and IDS[1][:8] in page.text
        # Two runs start with "abcdef"; five characters name none; nor does a start no run has.
        for unclear in ("abcdef", "abcde", "998877660", "ffffff", "abcdef%25", "______"):
            assert (await client.get(f"/runs/{unclear}")).status_code == 404, unclear


async def test_the_browsers_icon_is_there_for_a_signed_in_visit_only(make_app: AppFactory, serve_review: Serve) -> None:
    served = await serve_review(await make_app())
    async with httpx.AsyncClient(base_url=served.base) as client:
        assert (await client.get("/favicon.ico")).status_code == 401
        icon = await client.get("/favicon.ico", params={"token": served.token})
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
        assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
        page = await client.get("/")
        assert '<link rel="icon" href="/static/favicon.ico">' in page.text
