"""Photos, files and voice notes sent in a room are kept under Attachments/ and reach the model as on
Telegram: the photo as an image, a document's text, a recording's place (transcribed when a service is set)."""

from __future__ import annotations

import io
import json
from typing import Any

from nio import UploadResponse
from PIL import Image

from tests.channels.matrix.conftest import Person, eventually
from tests.fakes.scripted_model import ScriptedModel, say


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


async def send_file(person: Person, room: str, data: bytes, mimetype: str, content: dict[str, Any]) -> None:
    uploaded, _ = await person.client.upload(io.BytesIO(data), content_type=mimetype, filesize=len(data))
    assert isinstance(uploaded, UploadResponse), uploaded
    body = {"url": uploaded.content_uri, "info": {"mimetype": mimetype, "size": len(data)}, **content}
    await person.client.room_send(room, "m.room.message", body)


async def test_a_photo_a_document_and_a_voice_note_are_kept_and_given_to_the_model(serve: Any, people: Any) -> None:
    ann: Person = await people()
    model = ScriptedModel(lambda messages: say("Kept."))
    served = await serve([ann.user_id], model)
    room = await ann.direct_room(served.bot.user_id)
    await eventually(lambda: _joined(ann, room, served.bot.user_id), "the bot joined")

    picture = png()
    photo = {"msgtype": "m.image", "body": "the red door", "filename": "door.png"}
    await send_file(ann, room, picture, "image/png", photo)
    await eventually(lambda: _count(model, 1), "the photo reached the model")
    note = b"Plumber: Tuesday at nine, bring the spare key."
    await send_file(ann, room, note, "text/plain", {"msgtype": "m.file", "body": "plumber.txt"})
    await eventually(lambda: _count(model, 2), "the document reached the model")
    voice = b"OggS" + bytes(200)
    await send_file(
        ann, room, voice, "audio/ogg", {"msgtype": "m.audio", "body": "Voice message", "org.matrix.msc3245.voice": {}}
    )
    await eventually(lambda: _count(model, 3), "the voice note reached the model")

    attachments = served.app.notes.root / "Attachments"
    assert (attachments / "door.png").read_bytes() == picture
    assert (attachments / "plumber.txt").read_bytes() == note
    [recording] = [p for p in attachments.iterdir() if p.read_bytes() == voice]
    photo_turn, document_turn, voice_turn = (json.dumps(call[-1]) for call in model.calls)
    assert '"type": "image"' in photo_turn and "the red door" in photo_turn and "Attachments/door.png" in photo_turn
    assert "bring the spare key" in document_turn
    assert f"Attachments/{recording.name}" in voice_turn


async def _joined(person: Person, room: str, user: str) -> bool:
    return (await person.members(room)).get(user) == "join"


async def _count(model: ScriptedModel, count: int) -> bool:
    return len(model.calls) >= count
