"""Words in angle brackets reach Telegram as written: the help's ``/note <text>`` and a model's
``<b>`` are text, not HTML tags for the renderer to drop (Telegram shows no raw HTML)."""

from __future__ import annotations

import time

import pytest

from bot.channels.telegram.render import render
from tests.channels.telegram_harness import Serve
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel, say

HELP_LINES = [
    "/note <text> — file it as a note right away",
    "/find <words> — search your notes",
    "/cancel <id> — cancel a reminder",
]


@pytest.mark.parametrize("command", ["/help", "/start", "/bogus-cmd-zz"])
async def test_the_help_shows_its_placeholders_in_telegram(serve: Serve, command: str) -> None:
    served = await serve(ScriptedModel())
    served.fake.push_update(tg.text_update(command))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    [reply] = served.fake.sent_texts
    for line in HELP_LINES:
        assert line in reply.splitlines()


async def test_a_reply_with_html_in_it_shows_it_as_text_and_keeps_its_formatting(serve: Serve) -> None:
    written = (
        "Use <b>bold</b> sparingly, and **this** is bold.\n"
        "<div>\nThe line after a tag is kept.\n\n"
        "`<code>` stays code, and <https://example.com> a link."
    )
    served = await serve(ScriptedModel(lambda messages: say(written)))
    served.fake.push_update(tg.text_update("how do I make text bold?"))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    [sent] = served.fake.sent
    assert sent["text"] == (
        "Use <b>bold</b> sparingly, and this is bold.\n"
        "<div>\nThe line after a tag is kept.\n\n"
        "<code> stays code, and https://example.com a link."
    )
    shown = {(e["type"], sent["text"][e["offset"] : e["offset"] + e["length"]]) for e in sent["entities"]}
    assert {("bold", "this"), ("code", "<code>")} <= shown


def test_a_reply_of_many_tags_renders_in_bounded_time() -> None:
    hostile = "<div>\n<span>x</span>\n\n" * 20_000  # 500 kB of HTML blocks
    started = time.perf_counter()
    chunks = render(hostile)
    assert time.perf_counter() - started < 20  # linear: a quadratic pass would take minutes
    assert "".join(chunk.text for chunk in chunks).count("<span>x</span>") == 20_000
