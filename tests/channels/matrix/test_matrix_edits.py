"""A person's edit of their message (``m.replace``) is a correction of it, as on Telegram: the model reads
the new text as such, never the fallback body ("* …") that clients send for those that show no edits."""

from __future__ import annotations

import json
from typing import Any

from tests.channels.matrix.conftest import Person, eventually
from tests.fakes.scripted_model import ScriptedModel, say

CORRECTION = "[Correction: I edited an earlier message. It now reads:]"


async def test_an_edit_is_read_as_a_correction_of_the_message(serve: Any, people: Any) -> None:
    ann: Person = await people()
    model = ScriptedModel(lambda messages: say("Noted."))
    served = await serve([ann.user_id], model)
    room = await ann.direct_room(served.bot.user_id)
    first = await ann.say(room, "buy oat milk")
    await eventually(lambda: ann.messages(room, served.bot.user_id), "the reply to the message")

    new = {"msgtype": "m.text", "body": "buy almond milk"}
    relation = {"rel_type": "m.replace", "event_id": first}
    await ann.say(room, "* buy almond milk", **{"m.new_content": new, "m.relates_to": relation})
    replies = await eventually(
        lambda: _at_least(ann.messages(room, served.bot.user_id), 2), "the reply to the edit"
    )
    assert [reply["body"] for reply in replies] == ["Noted.", "Noted."]
    [edit] = [m for m in model.calls[-1] if m["role"] == "user" and "almond" in json.dumps(m, ensure_ascii=False)]
    seen = json.dumps(edit["content"], ensure_ascii=False)
    assert f"{CORRECTION}\\nbuy almond milk" in seen and "* buy almond milk" not in seen


async def test_an_edit_of_a_files_caption_is_not_a_new_message(serve: Any, people: Any) -> None:
    ann: Person = await people()
    model = ScriptedModel(lambda messages: say("Noted."))
    served = await serve([ann.user_id], model)
    room = await ann.direct_room(served.bot.user_id)
    first = await ann.say(room, "the plumber comes at 9")
    await eventually(lambda: ann.messages(room, served.bot.user_id), "the reply to the message")
    new = {"msgtype": "m.image", "body": "door.png", "url": "mxc://localhost/none"}
    relation = {"rel_type": "m.replace", "event_id": first}
    await ann.say(room, "* door.png", **{"m.new_content": new, "m.relates_to": relation})
    await ann.say(room, "and bring the key")
    replies = await eventually(lambda: _at_least(ann.messages(room, served.bot.user_id), 2), "the next reply")
    assert [reply["body"] for reply in replies] == ["Noted.", "Noted."]
    assert len(model.calls) == 2 and "door.png" not in json.dumps(model.calls[-1])


async def _at_least(messages: Any, n: int) -> Any:
    found = await messages
    return found if len(found) >= n else None
