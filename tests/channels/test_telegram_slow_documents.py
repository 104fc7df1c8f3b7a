"""A document that costs more than its limits, sent over Telegram: the real python-telegram-bot against
the fake Bot API, the real runner, vault and reading process. A PDF whose pages cost seconds each is
read in part, the rest left out and the person told, while another conversation's search is answered
at once."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.runner import ModelReply
from tests.channels.telegram_harness import ANN, Serve
from tests.channels.test_telegram_documents import push_document
from tests.fakes import telegram_server as tg
from tests.fakes.pdfs import slow_pdf
from tests.fakes.scripted_model import ScriptedModel, call, say
from tests.fakes.telegram_server import FakeTelegram

BOB = 43
REPORT = ["Quarterly report\nThe marmalade line doubled.", "Outlook\nWe expect more marmalade."]


def reader(messages: list[dict[str, Any]]) -> ModelReply:
    """A model that searches when asked to find something, and otherwise says it read the document."""
    last = messages[-1]["content"]
    if isinstance(last, list) and any(block.get("type") == "tool_result" for block in last):
        return say("Searched.")
    text = last if isinstance(last, str) else "".join(b.get("text", "") for b in last if b.get("type") == "text")
    if "find marmalade" in text:
        return call(("vault_search", {"query": "marmalade"}))
    return say("Read what I could.")


def sent_to(fake: FakeTelegram, chat_id: int) -> list[str]:
    return [entry["text"] for entry in fake.sent if entry.get("chat_id") in (chat_id, str(chat_id))]


@pytest.mark.slow
async def test_a_slow_pdf_is_read_in_part_while_another_conversations_search_is_answered_at_once(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram
) -> None:
    model = ScriptedModel(reader)
    limits = {"page_seconds": 1.0, "document_seconds": 4.0, "index_staleness": 0}  # every search checks the disk
    app = await make_app(model, telegram=fake.settings(allowed_users=[ANN, BOB]), vault=limits)
    await serve(app=app)
    # Two pages of text, then 58 that cost pypdf about two seconds of CPU each: two minutes in all, 13 KB.
    push_document(fake, "slow.pdf", slow_pdf(REPORT, 58), "application/pdf")
    await fake.await_for(lambda f: (app.notes.root / "Attachments" / "slow.pdf").exists(), timeout=20)

    started = time.monotonic()
    fake.push_update(tg.text_update("find marmalade", user_id=BOB, first_name="Bob", message_id=90))
    await fake.await_for(lambda f: "Searched." in sent_to(f, BOB), timeout=45)
    waited = time.monotonic() - started
    # Before, Bob's search read the PDF under the index's lock and waited for all of it (minutes).
    assert waited < 15, f"Bob's search waited {waited:.1f} s for Ann's PDF"

    await fake.await_for(lambda f: "Read what I could." in sent_to(f, ANN), timeout=45)
    [told] = [text for text in sent_to(fake, ANN) if text.startswith("I could read only part of slow.pdf")]
    # Stopped by its 4 s of CPU, or on a machine too busy to give it those, by the clock (21 s).
    assert "(of 60) were not read: reading the document took more than the " in told
    assert "skipped: it took more than the 1 s of processor time vaultbot allows a page" in told
    assert told.endswith("It is kept at Attachments/slow.pdf.")
    [read] = [m for m in model.calls if "[Text of the document Attachments/slow.pdf" in str(m[-1]["content"])]
    seen = str(read[-1]["content"])
    assert "--- Page 1 ---\nQuarterly report\nThe marmalade line doubled." in seen
    assert "--- Page 2 ---\nOutlook\nWe expect more marmalade." in seen
    assert "--- Page 3 ---\n[Not read: it took more than the 1 s of processor time vaultbot allows a page.]" in seen
    assert "\n[Left out here: not read at all, within vaultbot's limits of time and memory: pages 3–" in seen
    assert "(of 60) were not read: reading the document took more than the " in seen
    # The pages read are in the index: the document is found by their words.
    assert [hit.path for hit in app.notes.search("doubled")] == ["Attachments/slow.pdf"]
