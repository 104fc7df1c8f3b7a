"""What each kind of message becomes, as the README's table promises: reply context for the model,
locations with a map link, documents in ``Attachments/``, the 20 MB limit, and ``/start``."""

from __future__ import annotations

import pytest

from bot.bus import INBOUND, Attachment, Document, InboundMessage, Sender
from bot.clock import unstamp
from tests.channels.telegram_harness import Serve, echo
from tests.fakes import telegram_server as tg
from tests.fakes.pdfs import text_pdf
from tests.fakes.scripted_model import ScriptedModel

TWENTY_MB = 20 * 1024 * 1024


async def test_the_message_replied_to_reaches_the_model(serve: Serve) -> None:
    model = ScriptedModel(echo)
    served = await serve(model)
    mine = tg.text_update("Plumber: 0176 5550123")["message"]
    served.fake.push_update(tg.text_update("file this under Contacts", reply_to=mine))
    asked = tg.bot_message("Shall I file the plumber's number under Contacts?")
    partly = tg.text_update("that one", reply_to=tg.bot_message("Milk, eggs, and the blue paint."))
    partly["message"]["quote"] = {"text": "the blue paint", "position": 16}  # the user quoted a part
    served.fake.push_update(tg.text_update("yes please", reply_to=asked))
    served.fake.push_update(partly)
    await served.fake.await_for(lambda f: len(f.sent) == 3)
    seen = [unstamp(call[-1]["content"]) for call in model.calls]
    # The person's own message is context in their words; the bot's are not theirs (they may repeat anyone's).
    assert seen[0] == "[Replying to: “Plumber: 0176 5550123”]\nfile this under Contacts"
    mine_first, _, quoted = seen[1].partition("\n")
    assert mine_first == "yes please" and quoted.startswith('<untrusted source="quoted message" id="')
    assert "Shall I file the plumber's number under Contacts?" in quoted
    assert seen[2].startswith("that one\n<untrusted") and "the blue paint" in seen[2] and "Milk, eggs" not in seen[2]


async def test_a_reply_to_a_long_message_reaches_the_model_with_its_first_500_characters(serve: Serve) -> None:
    # The quoted message is context, not the question: a long one is cut so it cannot crowd out the prompt.
    model = ScriptedModel(echo)
    served = await serve(model)
    whole, long = "w" * 500, "L" * 500 + "!"  # at the limit, and one character over it
    served.fake.push_update(tg.text_update("and this?", reply_to=tg.text_update(whole)["message"]))
    served.fake.push_update(tg.text_update("and that?", reply_to=tg.text_update(long)["message"]))
    await served.fake.await_for(lambda f: len(f.sent) == 2)
    seen = [unstamp(call[-1]["content"]) for call in model.calls]
    assert seen == [f"[Replying to: “{whole}”]\nand this?", f"[Replying to: “{'L' * 500}…”]\nand that?"]


async def test_a_location_is_filed_with_a_map_link(serve: Serve) -> None:
    served = await serve()  # capture mode: the note shows what was filed
    served.fake.push_update(tg.location_update(52.52, 13.405))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    [note] = (served.app.notes.root / "Inbox").glob("*.md")
    assert "https://www.openstreetmap.org/?mlat=52.52000&mlon=13.40500" in note.read_text()


async def test_documents_are_saved_in_attachments_and_embedded_never_overwritten(serve: Serve) -> None:
    served = await serve()
    served.fake.add_file("doc1", b"%PDF-1.7 first", file_path="documents/file_1.pdf")
    served.fake.add_file("doc2", b"%PDF-1.7 second", file_path="documents/file_2.pdf")
    served.fake.push_update(tg.document_update("doc1", "report.pdf", "application/pdf", 14, caption="Q1"))
    served.fake.push_update(tg.document_update("doc2", "report.pdf", "application/pdf", 15, caption="Q2"))
    await served.fake.await_for(lambda f: len(f.sent) == 2)
    attachments = served.app.notes.root / "Attachments"
    assert (attachments / "report.pdf").read_bytes() == b"%PDF-1.7 first"
    assert (attachments / "report 2.pdf").read_bytes() == b"%PDF-1.7 second"
    notes = [note.read_text() for note in (served.app.notes.root / "Inbox").glob("*.md")]
    assert any("![[Attachments/report.pdf]]" in n and "Q1" in n for n in notes)
    assert any("![[Attachments/report 2.pdf]]" in n and "Q2" in n for n in notes)


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param({"file_size": TWENTY_MB + 1}, id="getFile reports the size"),
        pytest.param({"too_big": True}, id="getFile refuses"),
    ],
)
async def test_a_file_over_20_mb_found_by_get_file_is_not_downloaded(serve: Serve, refusal: dict[str, int]) -> None:
    served = await serve()
    served.fake.add_file("big", b"pretend this is large", file_path="documents/big.zip", **refusal)
    # The update itself says nothing of the size, as Telegram allows.
    served.fake.push_update(tg.document_update("big", "backup.zip", "application/zip", None))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    assert "too big" in served.fake.sent_texts[0] and "20 MB" in served.fake.sent_texts[0]
    assert served.fake.calls("getFile") and served.fake.downloads == []
    assert await served.app.bus.counts(INBOUND) == {}
    assert not (served.app.notes.root / "Attachments").exists()


async def test_start_says_hello_and_what_the_bot_can_do_without_the_model(serve: Serve) -> None:
    model = ScriptedModel()  # any call to it fails the turn
    served = await serve(model)
    served.fake.push_update(tg.text_update("/start"))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    [greeting] = served.fake.sent_texts
    assert greeting.startswith("Hello!") and "/note" in greeting and "/find" in greeting
    assert model.calls == []


async def test_a_file_telegram_will_not_hand_over_gets_a_reply_saying_so(serve: Serve) -> None:
    served = await serve()
    # Never added to the fake: getFile answers 400 "invalid file_id", as for a file Telegram has dropped.
    served.fake.push_update(tg.document_update("gone", "minutes.pdf", "application/pdf", 14, caption="keep this"))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    [reply] = served.fake.sent_texts
    assert reply.startswith("I could not fetch that document from Telegram") and "invalid file_id" in reply.lower()
    assert await served.app.bus.counts(INBOUND) == {}
    assert not (served.app.notes.root / "Attachments").exists()


async def test_a_file_of_exactly_20_mb_is_saved(serve: Serve) -> None:
    # Telegram lets bots download files *up to* 20 MB: the limit itself is still a file the user gets filed.
    served = await serve()
    served.fake.add_file("edge", b"pretend this is 20 MB", file_path="documents/edge.zip", file_size=TWENTY_MB)
    served.fake.push_update(tg.document_update("edge", "photos.zip", "application/zip", TWENTY_MB))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    assert (served.app.notes.root / "Attachments" / "photos.zip").read_bytes() == b"pretend this is 20 MB"
    assert "Saved to Inbox/" in served.fake.sent_texts[0]


async def test_the_inbound_record_keeps_who_sent_what_from_which_chat(serve: Serve) -> None:
    # The bus keeps each message as it came in, the first entry of what the bot did with it.
    served = await serve(ScriptedModel(echo))
    origin = {"type": "user", "date": 1, "sender_user": {"id": 7, "is_bot": False, "first_name": "Bob"}}
    forwarded = served.fake.push_update(tg.text_update("the gate code", message_id=77, forward_origin=origin))
    lease = text_pdf(["The lease runs for a year."])  # a real PDF: a broken one would be answered as broken too
    served.fake.add_file("doc1", lease, file_path="documents/file_1.pdf")
    document = served.fake.push_update(
        tg.document_update("doc1", "lease.pdf", "application/pdf", len(lease), caption="sign by Friday", message_id=78)
    )
    await served.fake.await_for(lambda f: len(f.sent) == 2)
    rows = await served.app.db.fetchall("SELECT payload FROM bus_messages WHERE topic = ? ORDER BY id", (INBOUND,))
    first, second = (InboundMessage.model_validate_json(row["payload"]) for row in rows)
    assert first.sender == second.sender == Sender(id="42", name="Ann")
    assert first.reply_to == second.reply_to == "42"
    assert first.meta == {
        "chat_id": 42,
        "message_id": 77,
        "update_id": forwarded,
        "kind": "text",
        "edited": False,
        "forwarded_from": "Bob",
    }
    assert second.meta == first.meta | {
        "message_id": 78,
        "update_id": document,
        "kind": "document",
        "forwarded_from": None,
    }
    assert first.attachments == [] and second.attachments == [Attachment(path="Attachments/lease.pdf", kind="document")]
    assert first.document is None and second.document == Document(path="Attachments/lease.pdf")


async def test_a_video_note_is_named_for_the_model_as_people_say_it(serve: Serve) -> None:
    model = ScriptedModel(echo)
    served = await serve(model)
    served.fake.add_file("vn1", b"mp4-video-note", file_path="video_notes/file_4.mp4")
    served.fake.push_update(tg.video_note_update("vn1", 12, 14, message_id=41))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    assert "[Video note saved in the vault: ![[Attachments/video note 41.mp4]]]" in unstamp(
        model.calls[0][-1]["content"]
    )
