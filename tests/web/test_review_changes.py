"""The run page shows what a run changed in the vault as a diff, and how to undo it: real Chromium at a
phone's 360 px on the real page, over a store filled by real turns (a scripted model, the real runner)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import Browser, Page, expect

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender, UntrustedPart
from bot.store import short_id
from tests.fakes.scripted_model import ScriptedModel, call, say
from tests.helpers import run_inbox
from tests.web.conftest import Served

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[[App], Awaitable[Served]]
PHONE = {"width": 360, "height": 740}


async def chat(app: App, text: str) -> str:
    """One message through the real runner; returns its run's id."""
    message = InboundMessage(channel="terminal", conversation="telegram:42", sender=Sender(id="ann"), text=text)
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    return str((await app.store.list_runs(limit=1))[0]["id"])


def write(title: str, content: str, **more: Any) -> tuple[str, dict[str, Any]]:
    return ("vault_write", {"folder": "Projects", "title": title, "content": content, **more})


async def visit(browser: Browser, served: Served, path: str) -> Page:
    page = await (await browser.new_context(viewport=PHONE)).new_page()  # type: ignore[arg-type]
    response = await page.goto(f"{served.base}{path}?token={served.token}")
    assert response is not None and response.status == 200
    await page.wait_for_load_state("load")
    return page


async def test_a_run_page_shows_each_change_as_a_diff_and_the_command_that_undoes_it(
    make_app: AppFactory, serve_review: Serve, browser: Browser
) -> None:
    model = ScriptedModel()
    app = await make_app(model)
    model.enqueue(call(write("Garden shed", "Build it in spring.\nUse larch <wood> & screws.")), say("Saved."))
    await chat(app, "shed plans")
    model.enqueue(
        call(("vault_read", {"path": "Projects/Garden shed"})),
        call(write("Garden shed", "Build it in autumn.\nUse larch <wood> & screws.", mode="replace")),
        say("Changed."),
    )
    replaced = await chat(app, "make that autumn")
    served = await serve_review(app)

    page = await visit(browser, served, f"/runs/{replaced}")

    changes = page.get_by_role("region", name="What it changed in the vault")
    await expect(
        changes.get_by_role("heading", name="replaced Projects/Garden shed.md Open in Obsidian")
    ).to_be_visible()
    lines = changes.get_by_role("listitem")
    await expect(lines.filter(has_text="Build it in spring.")).to_have_class("d-del")
    await expect(lines.filter(has_text="Build it in autumn.")).to_have_class("d-add")
    await expect(lines.filter(has_text="Use larch <wood> & screws.")).to_have_class("d-same")  # shown as text
    link = changes.get_by_role("link", name="Open in Obsidian")
    assert await link.get_attribute("href") == "obsidian://open?vault=vault&file=Projects%2FGarden%20shed"
    await expect(changes).to_contain_text(
        f"To undo this run: vaultbot undo {short_id(replaced)} on the machine, "
        f"or /undo {short_id(replaced)} in the chat."
    )
    await expect(changes).to_contain_text("Earlier text kept in .vaultbot/versions/Projects/Garden shed/")
    assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # Read-only: it shows the command and offers nothing to press or send (Sign out is the footer's, not the page's).
    assert await page.locator("main form, main button, main input[type=submit]").count() == 0


async def test_an_undone_run_says_so_and_links_its_undo_which_links_back(
    make_app: AppFactory, serve_review: Serve, browser: Browser
) -> None:
    model = ScriptedModel()
    app = await make_app(model)
    model.enqueue(call(write("Lisbon trip", "Flights on the 3rd.")), say("Saved."))
    created = await chat(app, "lisbon")
    undo = await chat(app, "/undo")
    served = await serve_review(app)

    page = await visit(browser, served, f"/runs/{created}")

    changes = page.get_by_role("region", name="What it changed in the vault")
    await expect(changes).to_contain_text(f"Undone by run {short_id(undo)} (/undo {short_id(undo)} puts it back).")
    await expect(changes).not_to_contain_text("To undo this run")
    await expect(changes.get_by_role("listitem").filter(has_text="Flights on the 3rd.")).to_have_class("d-add")
    await changes.get_by_role("link", name=f"run {short_id(undo)}").click()

    await expect(page.get_by_role("heading", name=f"Run {short_id(undo)}")).to_be_visible()
    await page.go_back()
    await changes.get_by_role("link", name="Projects/Lisbon trip.md").click()  # the note's own page
    await expect(page.get_by_role("heading", name="Projects/Lisbon trip.md")).to_be_visible()
    await page.goto(f"{served.base}/runs/{undo}")
    changes = page.get_by_role("region", name="What it changed in the vault")
    await expect(changes).to_contain_text(f"This run undid run {short_id(created)}.")
    await expect(changes.get_by_role("heading", name="moved to .trash Projects/Lisbon trip.md")).to_be_visible()
    await expect(changes.get_by_role("listitem").filter(has_text="Flights on the 3rd.")).to_have_class("d-del")

    as_json = await page.request.get(f"{served.base}/runs/{created}?format=json")
    data = json.loads(await as_json.text())
    assert data["changes"]["undone_by"] == undo
    assert [(c["kind"], c["path"]) for c in data["changes"]["items"]] == [("created", "Projects/Lisbon trip.md")]


async def test_a_run_page_marks_the_changes_a_run_holding_someone_elses_words_made(
    make_app: AppFactory, serve_review: Serve, browser: Browser
) -> None:
    model = ScriptedModel()
    app = await make_app(model)
    model.enqueue(call(write("Lunch", "Lunch with Mallory on Friday at noon, she books the table.")), say("Saved."))
    forwarded = UntrustedPart(source="forwarded message", text="Lunch on Friday at noon? I book the table.")
    message = InboundMessage(
        channel="terminal", conversation="telegram:7", sender=Sender(id="ann"), text="save this", untrusted=[forwarded]
    )  # a conversation of its own: the clean run's history does not hold the forward
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    tainted = str((await app.store.list_runs(limit=1))[0]["id"])
    model.enqueue(call(write("Shed", "Build the garden shed in spring.")), say("Saved."))
    clean = await chat(app, "shed plans")
    served = await serve_review(app)

    page = await visit(browser, served, f"/runs/{tainted}")
    changes = page.get_by_role("region", name="What it changed in the vault")
    await expect(changes).to_contain_text("Written by a run holding words from forwarded message")
    page = await visit(browser, served, f"/runs/{clean}")
    changes = page.get_by_role("region", name="What it changed in the vault")
    await expect(changes.get_by_role("heading", name="created Projects/Shed.md Open in Obsidian")).to_be_visible()
    await expect(changes).not_to_contain_text("someone else's words")
