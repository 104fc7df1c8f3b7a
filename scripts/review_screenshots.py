"""Screenshots of the review page for the README: a few real turns (an in-process scripted model
standing in for Claude, everything else real) in a scratch store, then Chromium at desktop width,
and at a phone's 360 px as a Telegram Mini App (signed in with init data signed here, in Telegram's
light and dark themes); and, in a store of its own, a note's change as the run page shows it at 360 px.

    .venv/bin/python scripts/review_screenshots.py [docs/]
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.app import App  # noqa: E402
from bot.bus import INBOUND, InboundMessage, Sender  # noqa: E402
from bot.runner import ModelReply, Usage  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.web import ReviewServer, review_page, review_token  # noqa: E402
from tests.web.telegram_init_data import fragment, signed  # noqa: E402

MODEL = "claude-sonnet-5"
BOT_TOKEN = "123456:screenshot-token"
USER = 4242
# Telegram's theme parameters as its Android app sends them.
THEMES = {
    "light": {
        "bg_color": "#ffffff",
        "secondary_bg_color": "#f0f0f0",
        "section_bg_color": "#ffffff",
        "text_color": "#222222",
        "hint_color": "#a8a8a8",
        "subtitle_text_color": "#82868a",
        "link_color": "#2678b6",
        "button_color": "#50a8eb",
        "button_text_color": "#ffffff",
        "section_separator_color": "#e7e7e7",
        "destructive_text_color": "#cc2929",
    },
    "dark": {
        "bg_color": "#212d3b",
        "secondary_bg_color": "#151e27",
        "section_bg_color": "#1d2733",
        "text_color": "#ffffff",
        "hint_color": "#7d8b99",
        "subtitle_text_color": "#7e8b98",
        "link_color": "#5eabe1",
        "button_color": "#50a8eb",
        "button_text_color": "#ffffff",
        "section_separator_color": "#0d1218",
        "destructive_text_color": "#ee686f",
    },
}
_ids = itertools.count(1)


def _calls(*calls: tuple[str, dict[str, Any]], text: str = "") -> ModelReply:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": n, "input": i} for n, i in calls]
    return ModelReply(blocks, "tool_use", Usage(2400, 160, 0, 1800), MODEL)


def _say(text: str) -> ModelReply:
    return ModelReply([{"type": "text", "text": text}], "end_turn", Usage(300, 60, 0, 4100), MODEL)


# (conversation, message, the model's replies)
SCRIPT: list[tuple[str, str, list[ModelReply]]] = [
    (
        "telegram:4242",
        "remind me to renew the passport before the trip in March",
        [
            _calls(("vault_search", {"query": "passport trip March"})),
            _calls(
                (
                    "vault_write",
                    {
                        "folder": "Tasks",
                        "title": "Renew passport",
                        "content": "- [ ] Renew the passport before the trip in March\n\nLinked: [[Trip to Lisbon]]",
                        "tags": ["task", "travel"],
                    },
                ),
                ("log_interaction", {"summary": "Filed a task: renew the passport before March", "category": "task"}),
            ),
            _calls(("send_message", {"text": "Added to **Tasks/Renew passport.md**, linked to your Lisbon trip."})),
            _say("Done."),
        ],
    ),
    (
        "telegram:4242",
        "what did I decide about the garden shed?",
        [
            _calls(("vault_read", {"path": "Projects/Garden shed"})),
            _calls(("vault_search", {"query": "garden shed"})),
            _calls(
                ("log_interaction", {"summary": "Answered: no note about the garden shed yet", "category": "question"})
            ),
            _say("I have no note about the garden shed yet. Want me to start one?"),
        ],
    ),
    (
        "terminal:ann",
        "idea: a weekly review template with three questions",
        [
            _calls(
                (
                    "vault_write",
                    {
                        "folder": "Ideas",
                        "title": "Weekly review template",
                        "content": "1. What went well?\n2. What got stuck?\n3. What matters next week?",
                        "tags": ["idea"],
                    },
                ),
                ("log_interaction", {"summary": "Saved an idea: weekly review template", "category": "idea"}),
            ),
            _say("Saved to Ideas/Weekly review template.md."),
        ],
    ),
    (
        "telegram:4242",
        "https://example.org/sourdough — read later",
        [
            _calls(
                (
                    "vault_write",
                    {
                        "folder": "Reading",
                        "title": "Sourdough guide",
                        "content": "https://example.org/sourdough\n\nTo read later.",
                        "tags": ["link"],
                    },
                ),
                ("log_interaction", {"summary": "Saved a link to read later: sourdough guide", "category": "link"}),
            ),
            _say("Saved to Reading/Sourdough guide.md."),
        ],
    ),
]


# A note written, then changed: the run page of the change shows its diff (review-diff.png).
CHANGED: list[tuple[str, str, list[ModelReply]]] = [
    (
        "telegram:4242",
        "idea: a weekly review template with three questions",
        [
            _calls(
                (
                    "vault_write",
                    {
                        "folder": "Ideas",
                        "title": "Weekly review template",
                        "content": "1. What went well?\n2. What got stuck?\n3. What matters next week?",
                        "tags": ["idea"],
                    },
                )
            ),
            _say("Saved to Ideas/Weekly review template.md."),
        ],
    ),
    (
        "telegram:4242",
        "make the second one ask why, and add one about energy",
        [
            _calls(("vault_read", {"path": "Ideas/Weekly review template"})),
            _calls(
                (
                    "vault_write",
                    {
                        "folder": "Ideas",
                        "title": "Weekly review template",
                        "content": "1. What went well?\n2. What got stuck, and why?\n3. What matters next week?\n"
                        "4. When did I have the most energy?",
                        "mode": "replace",
                    },
                )
            ),
            _say("Done: question 2 asks why, and question 4 is about energy."),
        ],
    ),
]


class Demo:
    """Replies from one queue, in order."""

    name = MODEL

    def __init__(self, replies: list[ModelReply]) -> None:
        self._replies = replies

    async def complete(self, **_: Any) -> ModelReply:
        return self._replies.pop(0)


async def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(
            _env_file=None,
            vault={"path": Path(scratch) / "vault"},
            store={"path": Path(scratch) / "db.sqlite"},
            telegram={"token": BOT_TOKEN, "allowed_users": [USER]},
            review={"public_url": "https://review.example.com"},
        )
        async with _played(settings, SCRIPT) as (app, base, token):
            first_run = (await app.store.list_runs(limit=10))[-1]["id"]
            await _shoot(base, token, first_run, out)
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(
            _env_file=None, vault={"path": Path(scratch) / "vault"}, store={"path": Path(scratch) / "db.sqlite"}
        )
        async with _played(settings, CHANGED) as (app, base, token):
            changed = (await app.store.list_runs(limit=1))[0]["id"]
            await _shoot_diff(base, token, changed, out)


@asynccontextmanager
async def _played(
    settings: Settings, script: list[tuple[str, str, list[ModelReply]]]
) -> AsyncIterator[tuple[App, str, str]]:
    """An app that has handled the ``script``'s messages, and its review page served (address, token)."""
    replies = [reply for _, _, turn in script for reply in turn]
    async with await App.open(settings, model=Demo(replies)) as app:
        for conversation, text, _ in script:
            message = InboundMessage(channel="terminal", conversation=conversation, sender=Sender(id="ann"), text=text)
            await app.bus.publish(INBOUND, message, conversation=conversation)
            await app.runner_worker().run(burst=True)
        token = await review_token(settings, app.db)
        async with review_page(settings, token) as page_app:
            server = ReviewServer(page_app, "127.0.0.1", 0)
            stop = asyncio.Event()
            serving = asyncio.create_task(server.serve(stop))
            try:
                yield app, f"http://127.0.0.1:{server.port}", token
            finally:
                stop.set()
                await serving


async def _shoot_diff(base: str, token: str, run_id: str, out: Path) -> None:
    """The run page's changes section for a replaced note, at a phone's 360 px."""
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        phone = await browser.new_context(viewport={"width": 360, "height": 740}, device_scale_factor=2)
        page = await phone.new_page()
        await page.goto(f"{base}/runs/{run_id}?token={token}")
        await page.locator("section.changes").screenshot(path=out / "review-diff.png")
        await browser.close()


async def _shoot(base: str, token: str, run_id: str, out: Path) -> None:
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1000, "height": 600})
        await page.goto(f"{base}/?token={token}")
        await page.screenshot(path=out / "review-timeline.png", full_page=True)
        await page.goto(f"{base}/runs/{run_id}")
        await page.screenshot(path=out / "review-run.png", full_page=True)
        for name, theme in THEMES.items():
            phone = await browser.new_context(viewport={"width": 360, "height": 740}, device_scale_factor=2)
            page = await phone.new_page()
            await page.goto(f"{base}/telegram/{fragment(signed(BOT_TOKEN, user_id=USER), theme)}")
            await page.wait_for_url(f"{base}/")
            await page.screenshot(path=out / f"review-mini-app-{name}.png")
            await phone.close()
        await browser.close()


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs")
    target.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(target))
    print(
        f"wrote review-timeline.png, review-run.png, review-mini-app-{{light,dark}}.png and review-diff.png in {target}"
    )
