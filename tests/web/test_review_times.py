"""The review page shows each time in the user's zone and says which zone that is (CET in winter,
CEST in summer for Europe/Berlin), as a person reads it in a real browser."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from playwright.async_api import Browser, expect

from bot.app import App
from bot.db import to_iso
from tests.web.conftest import Served

WINTER = datetime(2026, 1, 15, 12, 31, 5, tzinfo=UTC)  # 13:31:05 CET
SUMMER = datetime(2026, 7, 15, 12, 31, 5, tzinfo=UTC)  # 14:31:05 CEST


async def test_timeline_and_runs_show_local_times_with_their_zone(
    make_app: Callable[..., Awaitable[App]], browser: Browser, serve_review: Callable[[App], Awaitable[Served]]
) -> None:
    app = await make_app(timezone="Europe/Berlin")
    for run_id, when, season in (("a" * 32, WINTER, "winter"), ("b" * 32, SUMMER, "summer")):
        entry = await app.store.add_interaction(
            conversation="terminal:ann", category="note", summary=f"{season} entry", run_id=run_id
        )
        await app.store.start_run(run_id, conversation="terminal:ann", inbound_id=None, model="m", mode="model")
        # The store stamps the present; these rows stand for what happened then.
        await app.db.execute("UPDATE interactions SET created_at = ? WHERE id = ?", (to_iso(when), entry))
        await app.db.execute("UPDATE runs SET started_at = ? WHERE id = ?", (to_iso(when), run_id))
    served = await serve_review(app)

    page = await (await browser.new_context()).new_page()
    await page.goto(served.url)
    winter = page.get_by_role("listitem").filter(has_text="winter entry")
    await expect(winter.locator("time")).to_have_text("13:31:05 CET")
    summer = page.get_by_role("listitem").filter(has_text="summer entry")
    await expect(summer.locator("time")).to_have_text("14:31:05 CEST")

    await page.goto(served.base + "/runs")
    await expect(page.get_by_text("2026-01-15 13:31 CET")).to_be_visible()
    await expect(page.get_by_text("2026-07-15 14:31 CEST")).to_be_visible()
