"""The run page links the clipping a run filed and the document it read (not one it could not), served by the
review page over the store (read-only, as `vaultbot review` serves it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from bot.app import App
from bot.bus import INBOUND, Document, InboundMessage, Sender
from bot.settings import Settings
from tests.conftest import make_settings
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.web_server import FakeWeb
from tests.helpers import run_inbox
from tests.runner.conftest import said, send
from tests.web.conftest import Served


def on_the_fake_api(tmp_path: Path, fake_anthropic: FakeAnthropic, **more: Any) -> Settings:
    """Settings of an app whose model is the fake Messages API, plus ``more``."""
    return make_settings(
        tmp_path,
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test"},
        **more,
    )


async def test_the_run_page_links_the_clipping_a_run_filed(
    tmp_path: Path, fake_anthropic: FakeAnthropic, serve_review: object
) -> None:
    settings = on_the_fake_api(tmp_path, fake_anthropic, clip={"allow_private": True})
    with FakeWeb() as web:
        async with await App.open(settings) as app:
            fake_anthropic.enqueue(api.tool_use(("clip_link", {"url": web.url("/essay")})), api.text("Clipped."))
            await send(app, f"keep this essay for later: {web.url('/essay')}")  # words: the model clips it
            await run_inbox(app)
            [run] = await app.store.list_runs(limit=1)
            served: Served = await serve_review(app)  # type: ignore[operator]
            async with httpx.AsyncClient(base_url=served.base, params={"token": served.token}) as client:
                page = (await client.get(f"/runs/{run['id']}")).text
    assert "Notes written, clipped or read" in page
    assert f'href="/notes/{quote("Clippings/Why Sleep Matters.md")}"' in page


async def test_the_run_page_links_the_document_a_run_read_and_not_one_it_could_not(
    tmp_path: Path, fake_anthropic: FakeAnthropic, serve_review: object
) -> None:
    settings = on_the_fake_api(tmp_path, fake_anthropic)
    async with await App.open(settings) as app:
        (app.notes.root / "Attachments").mkdir()
        (app.notes.root / "Attachments" / "lease terms.txt").write_text("The rent is due on the first.\n")
        fake_anthropic.enqueue(api.text("The rent is due on the first."), api.text("I could not read that one."))
        for name, conversation in (("lease terms.txt", "terminal:ann"), ("gone.txt", "terminal:bob")):
            message = InboundMessage(
                channel="terminal",
                conversation=conversation,
                sender=Sender(id="ann"),
                text="what does it say?",
                document=Document(path=f"Attachments/{name}"),
            )
            await app.bus.publish(INBOUND, message, conversation=conversation)
            await run_inbox(app)
        runs = {run["conversation"]: run["id"] for run in await app.store.list_runs()}
        served: Served = await serve_review(app)  # type: ignore[operator]
        async with httpx.AsyncClient(base_url=served.base, params={"token": served.token}) as client:
            read = (await client.get(f"/runs/{runs['terminal:ann']}")).text
            unread = (await client.get(f"/runs/{runs['terminal:bob']}")).text
    assert "rent is due" in said(fake_anthropic.requests[0].body["messages"][-1])
    assert f'href="/notes/{quote("Attachments/lease terms.txt")}"' in read
    assert "gone.txt" in unread and 'href="/notes/Attachments/gone.txt"' not in unread
