"""Documents sent over Telegram: the real python-telegram-bot against the fake Bot API and the real
``anthropic`` SDK against the fake Messages API. The model reads the document's text (page markers,
a bounded length that says what was left out), a document it cannot read is answered clearly, the
file stays in Attachments/, and the vault's search and read find its text afterwards."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.consent import unlabelled
from bot.runner.documents import MAX_CHARS
from tests.channels.telegram_harness import ANN, Serve, Served
from tests.fakes import anthropic_server as api
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.pdfs import CORRUPT, scanned_pdf, text_pdf
from tests.fakes.telegram_server import FakeTelegram

REPORT = ["Quarterly report\nRevenue grew by twelve percent.", "Outlook\nWe expect the marmalade line to double."]


async def serve_claude(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, claude: FakeAnthropic
) -> Served:
    telegram = {"token": tg.DEFAULT_TOKEN, "allowed_users": [ANN], "base_url": fake.base_url}
    telegram["base_file_url"] = fake.base_file_url
    opened = await make_app(
        None,
        telegram=telegram,
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=claude.base_url,
        model={"name": "claude-test"},
    )
    return await serve(app=opened)


def push_document(fake: FakeTelegram, name: str, data: bytes, mime: str, message_id: int = 50, **extra: Any) -> int:
    fake.add_file(f"d{message_id}", data, file_path=f"documents/file_{message_id}")
    return fake.push_update(tg.document_update(f"d{message_id}", name, mime, len(data), message_id=message_id, **extra))


def first_read(claude: FakeAnthropic) -> str:
    """The user's message as the model first read it."""
    content = claude.requests[0].body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


async def test_the_model_reads_a_pdfs_text_with_page_markers_and_the_file_is_kept_without_a_note(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.text("Revenue grew by twelve percent."))
    served = await serve_claude(serve, make_app, fake, fake_anthropic)
    data = text_pdf(REPORT)
    push_document(fake, "q1.pdf", data, "application/pdf", caption="what does it say?")
    await fake.await_for(lambda f: f.sent_texts == ["Revenue grew by twelve percent."])
    read = first_read(fake_anthropic)
    assert "[Document saved in the vault: ![[Attachments/q1.pdf]]]" in read and "what does it say?" in read
    assert "[Text of the document Attachments/q1.pdf, 2 pages, extracted by vaultbot:]" in read
    assert '\n<untrusted source="document" id=' in read  # the document's words are someone else's
    assert "--- Page 1 ---\nQuarterly report\nRevenue grew by twelve percent." in read
    assert "--- Page 2 ---\nOutlook\nWe expect the marmalade line to double." in read
    assert "Left out" not in read
    root = served.app.notes.root
    assert (root / "Attachments" / "q1.pdf").read_bytes() == data
    assert not list(root.rglob("*.md"))  # no note beside the file: the model wrote none


async def test_a_found_document_is_searched_and_read_by_the_model_through_its_tools(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(
        api.text("Got it."),
        api.tool_use(("vault_search", {"query": "marmalade"})),
        api.tool_use(("vault_read", {"path": "Attachments/q1.pdf"})),
        api.text("The outlook page says marmalade will double."),
    )
    served = await serve_claude(serve, make_app, fake, fake_anthropic)
    push_document(fake, "q1.pdf", text_pdf(REPORT), "application/pdf")
    await fake.await_for(lambda f: len(f.sent) == 1)
    fake.push_update(tg.text_update("what did the report say about marmalade?", message_id=51))
    await fake.await_for(lambda f: len(f.sent) == 2)
    found = json.loads(unlabelled(fake_anthropic.requests[2].body["messages"][-1]["content"][0]["content"]))
    assert [r["path"] for r in found["results"]] == ["Attachments/q1.pdf"]
    assert "marmalade" in found["results"][0]["snippet"]
    read = json.loads(unlabelled(fake_anthropic.requests[3].body["messages"][-1]["content"][0]["content"]))
    assert read["path"] == "Attachments/q1.pdf" and read["title"] == "q1.pdf"
    assert read["content"].startswith("--- Page 1 ---\nQuarterly report") and "marmalade line" in read["content"]
    assert served.app.notes.search("marmalade")[0].path == "Attachments/q1.pdf"


@pytest.mark.parametrize(
    ("name", "data", "mime", "expected"),
    [
        ("lease.pdf", text_pdf(["The rent is due monthly."], password="hunter2"), "application/pdf", "encrypted"),
        ("scan.pdf", scanned_pdf(3), "application/pdf", "no text layer"),
        ("broken.pdf", CORRUPT, "application/pdf", "damaged or not the kind of file"),
    ],
)
async def test_a_document_whose_text_cannot_be_read_is_answered_clearly_and_kept(
    serve: Serve,
    make_app: Callable[..., Awaitable[App]],
    fake: FakeTelegram,
    fake_anthropic: FakeAnthropic,
    name: str,
    data: bytes,
    mime: str,
    expected: str,
) -> None:
    fake_anthropic.enqueue(api.text("Noted."))
    served = await serve_claude(serve, make_app, fake, fake_anthropic)
    push_document(fake, name, data, mime)
    await fake.await_for(lambda f: len(f.sent) == 2)
    [told] = [t for t in fake.sent_texts if t.startswith("I could not read")]
    assert told == f"I could not read {name}: {told.split(': ', 1)[1]}" and expected in told
    assert f"It is kept at Attachments/{name}." in told
    read = first_read(fake_anthropic)
    assert f"(vaultbot could not read the text of the document Attachments/{name}: " in read and expected in read
    assert (served.app.notes.root / "Attachments" / name).read_bytes() == data


async def test_a_thousand_page_pdf_is_read_up_to_the_bound_which_says_what_was_left_out(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.text("That is a long one."))
    await serve_claude(serve, make_app, fake, fake_anthropic)
    pages = [f"Chapter {n}\n" + f"Paragraph {n} of the handbook goes on. " * 12 for n in range(1, 1001)]
    push_document(fake, "handbook.pdf", text_pdf(pages), "application/pdf")
    await fake.await_for(lambda f: f.sent_texts == ["That is a long one."], timeout=30)
    read = first_read(fake_anthropic)
    assert "1000 pages" in read and "--- Page 1 ---\nChapter 1\n" in read
    document = read.split("extracted by vaultbot:]\n", 1)[1]
    labelled, left_out = document.rsplit("\n[Left out here: ", 1)
    body = unlabelled(labelled)
    assert len(body) <= MAX_CHARS
    last_page = max(n for n in range(1, 1001) if f"--- Page {n} ---" in body)
    assert 10 < last_page < 1000 and f"--- Page {last_page + 1} ---" not in read
    assert left_out.startswith(f"the rest of page {last_page} and pages {last_page + 1}–1000 (of 1000)")
    assert 'vault_read "Attachments/handbook.pdf"' in left_out


@pytest.mark.parametrize(
    ("name", "mime", "data", "seen"),
    [
        ("list.txt", "text/plain", b"eggs\nflour\nmarmalade\n", "eggs\nflour\nmarmalade"),
        ("notes.md", "text/markdown", b"# Plan\n- call the plumber\n", "# Plan\n- call the plumber"),
        ("sales.csv", "text/csv", b"month,total\njan,120\nfeb,135\n", "month,total\njan,120\nfeb,135"),
        ("config.json", "application/json", b'{"lights": "on", "volume": 7}', '{"lights": "on", "volume": 7}'),
        ("latin.txt", "text/plain", "café crème brûlée".encode("cp1252"), "café crème brûlée"),
    ],
)
async def test_text_csv_json_and_markdown_files_are_read_too(
    serve: Serve,
    make_app: Callable[..., Awaitable[App]],
    fake: FakeTelegram,
    fake_anthropic: FakeAnthropic,
    name: str,
    mime: str,
    data: bytes,
    seen: str,
) -> None:
    fake_anthropic.enqueue(api.text("Read it."))
    await serve_claude(serve, make_app, fake, fake_anthropic)
    push_document(fake, name, data, mime)
    await fake.await_for(lambda f: f.sent_texts == ["Read it."])
    read = first_read(fake_anthropic)
    assert f"[Text of the document Attachments/{name}, extracted by vaultbot:]" in read
    assert seen in read and "--- Page" not in read


async def test_the_documents_text_is_counted_as_input_tokens_in_usage_and_cost(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram
) -> None:
    with FakeAnthropic(prompt_cache=True) as claude:  # answers with the tokens each request would cost
        claude.enqueue(api.text("Hello."), api.text("Read it."))
        served = await serve_claude(serve, make_app, fake, claude)
        fake.push_update(tg.text_update("hello", message_id=49))
        await fake.await_for(lambda f: len(f.sent) == 1)
        pages = [f"Page {n}\n" + "The tenant keeps the garden tidy. " * 30 for n in range(1, 6)]
        push_document(fake, "lease.pdf", text_pdf(pages), "application/pdf")
        await fake.await_for(lambda f: len(f.sent) == 2)
        plain, with_document = claude.usages
    [day] = await served.app.store.usage_by_day(since=None, tz=served.app.clock.tz)

    def total(usage: dict[str, int]) -> int:
        return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]

    recorded = day.input_tokens + day.cache_write_tokens + day.cache_read_tokens
    assert recorded == total(plain) + total(with_document) and day.cost_usd > 0
    # The document's text is simply input: its ~1,300 tokens are in the second request's count.
    assert 1200 < total(with_document) - total(plain) < 1600
