"""A photo and a file sent in a Matrix room are changes like notes: ``/undo`` in the room moves them to
.trash/ and the reply says so. A real Synapse, the channel served in-process, capture mode (no model)."""

from __future__ import annotations

from typing import Any

from tests.channels.matrix.conftest import Person, eventually
from tests.channels.matrix.test_matrix_files import png, send_file


async def test_undo_in_the_room_takes_back_a_photo_and_the_note_that_links_it(serve: Any, people: Any) -> None:
    ann: Person = await people()
    served = await serve([ann.user_id])
    room = await ann.direct_room(served.bot.user_id)
    await eventually(lambda: _joined(ann, room, served.bot.user_id), "the bot joined")
    root = served.app.notes.root

    picture = png()
    photo = {"msgtype": "m.image", "body": "the red door", "filename": "door.png"}
    await send_file(ann, room, picture, "image/png", photo)
    await eventually(lambda: _replies(ann, room, served.bot.user_id, 1), "the photo was answered")
    assert (root / "Attachments" / "door.png").read_bytes() == picture
    [note] = (root / "Inbox").iterdir()
    assert "door.png" in note.read_text(encoding="utf-8")

    await ann.say(room, "/undo")
    replies = await eventually(lambda: _replies(ann, room, served.bot.user_id, 2), "the undo was answered")

    told = replies[-1]["body"]
    assert "• Attachments/door.png: moved to .trash/Attachments/door.png" in told
    assert f"• Inbox/{note.name}: moved to .trash/Inbox/{note.name}" in told
    assert not (root / "Attachments" / "door.png").exists() and list((root / "Inbox").iterdir()) == []
    assert (root / ".trash" / "Attachments" / "door.png").read_bytes() == picture


async def test_undo_in_the_room_takes_back_a_file(serve: Any, people: Any) -> None:
    ann: Person = await people()
    served = await serve([ann.user_id])
    room = await ann.direct_room(served.bot.user_id)
    await eventually(lambda: _joined(ann, room, served.bot.user_id), "the bot joined")
    root = served.app.notes.root

    data = b"PK\x03\x04 the plans for the shed"
    await send_file(ann, room, data, "application/zip", {"msgtype": "m.file", "body": "shed.zip"})
    await eventually(lambda: _replies(ann, room, served.bot.user_id, 1), "the file was answered")
    assert (root / "Attachments" / "shed.zip").read_bytes() == data

    await ann.say(room, "/undo")
    replies = await eventually(lambda: _replies(ann, room, served.bot.user_id, 2), "the undo was answered")

    assert "• Attachments/shed.zip: moved to .trash/Attachments/shed.zip" in replies[-1]["body"]
    assert not (root / "Attachments" / "shed.zip").exists()
    assert (root / ".trash" / "Attachments" / "shed.zip").read_bytes() == data


async def _joined(person: Person, room: str, user: str) -> bool:
    return (await person.members(room)).get(user) == "join"


async def _replies(person: Person, room: str, bot: str, count: int) -> list[dict[str, Any]] | None:
    found = await person.messages(room, bot)
    return found if len(found) >= count else None
