"""Clips and photos are changes like notes: ``/undo`` takes them back, over the real Telegram channel
(python-telegram-bot against the fake Bot API) and the real clipper (against the fake web site)."""

from __future__ import annotations

from bot.app import App
from tests.channels.telegram_harness import Serve
from tests.clip.conftest import ClipApp
from tests.fakes import telegram_server as tg
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.web_server import FakeWeb
from tests.helpers import outbox, run_inbox
from tests.images.pictures import jpeg, upright
from tests.runner.conftest import send


async def test_undo_of_a_clip_moves_the_clipped_page_to_the_trash_and_a_new_clip_fetches_it_again(
    clip_app: ClipApp, web: FakeWeb
) -> None:
    app = await clip_app(claude=False)
    await send(app, web.url("/recipe"))
    await run_inbox(app)
    note = app.notes.root / "Clippings" / "Easy Lentil Soup.md"
    clipped = note.read_bytes()

    await send(app, "/undo")
    await run_inbox(app)

    reply = (await outbox(app))[-1].text
    assert "• Clippings/Easy Lentil Soup.md: moved to .trash/Clippings/Easy Lentil Soup.md" in reply
    assert not note.exists()
    assert (app.notes.root / ".trash/Clippings/Easy Lentil Soup.md").read_bytes() == clipped
    # The page is not remembered as clipped any more: the same link clips it again.
    await send(app, web.url("/recipe"))
    await run_inbox(app)
    assert "Rinse two hundred grams of red lentils" in note.read_text(encoding="utf-8")
    assert web.hits["/recipe"] == 2


async def send_photo(fake: FakeTelegram, data: bytes, message_id: int, **options: object) -> None:
    fake.add_file(f"ph{message_id}", data, file_path=f"photos/file_{message_id}.jpg")
    fake.push_update(tg.photo_update(f"ph{message_id}", len(data), message_id=message_id, **options))


async def test_undo_over_telegram_takes_back_a_photo_and_the_note_that_links_it(
    serve: Serve, fake: FakeTelegram
) -> None:
    served = await serve()  # capture mode: the photo is saved and a note links it
    photo = jpeg(upright())
    await send_photo(fake, photo, message_id=7, caption="the whiteboard")
    await fake.await_for(lambda f: len(f.sent_texts) == 1, timeout=30)
    root = served.app.notes.root
    assert (root / "Attachments/photo 7.jpg").read_bytes() == photo
    [note] = (root / "Inbox").iterdir()
    assert "photo 7.jpg" in note.read_text(encoding="utf-8")

    fake.push_update(tg.text_update("/undo", message_id=8))
    await fake.await_for(lambda f: len(f.sent_texts) == 2, timeout=30)

    told = fake.sent_texts[-1]
    assert f"• Inbox/{note.name}: moved to .trash/Inbox/{note.name}" in told
    assert "• Attachments/photo 7.jpg: moved to .trash/Attachments/photo 7.jpg" in told
    assert not (root / "Attachments/photo 7.jpg").exists() and list((root / "Inbox").iterdir()) == []
    assert (root / ".trash/Attachments/photo 7.jpg").read_bytes() == photo


async def test_a_photo_stays_while_a_note_left_in_place_links_it(serve: Serve, fake: FakeTelegram) -> None:
    served = await serve()
    await send_photo(fake, jpeg(upright()), message_id=7, caption="the whiteboard")
    await fake.await_for(lambda f: len(f.sent_texts) == 1, timeout=30)
    root = served.app.notes.root
    [note] = (root / "Inbox").iterdir()
    note.write_text(note.read_text(encoding="utf-8") + "\nCopied the numbers off it.\n", encoding="utf-8")

    fake.push_update(tg.text_update("/undo", message_id=8))
    await fake.await_for(lambda f: len(f.sent_texts) == 2, timeout=30)

    told = fake.sent_texts[-1]
    assert f"• Attachments/photo 7.jpg: Inbox/{note.name}, left as it is, links it" in told
    assert (root / "Attachments/photo 7.jpg").exists() and note.exists()


async def test_a_file_another_message_brought_too_stays(serve: Serve, fake: FakeTelegram) -> None:
    served = await serve()
    data = b"PK\x03\x04 the same archive"
    for message_id in (7, 9):  # the same file twice: the vault keeps one copy, which both messages name
        fake.add_file(f"doc{message_id}", data, file_path="documents/plans.zip")
        fake.push_update(
            tg.document_update(f"doc{message_id}", "plans.zip", "application/zip", len(data), message_id=message_id)
        )
        await fake.await_for(lambda f, n=message_id: len(f.sent_texts) == (1 if n == 7 else 2), timeout=30)
    app: App = served.app
    assert [p.name for p in (app.notes.root / "Attachments").iterdir()] == ["plans.zip"]

    fake.push_update(tg.text_update("/undo", message_id=10))
    await fake.await_for(lambda f: len(f.sent_texts) == 3, timeout=30)

    assert "• Attachments/plans.zip: it came with another message too (run " in fake.sent_texts[-1]
    assert (app.notes.root / "Attachments/plans.zip").read_bytes() == data
