"""A long reply is shown as it is written: one message, edited (m.replace) as the text grows, whose last
edit is the reply itself, in HTML; a short reply arrives whole, as one message."""

from __future__ import annotations

from typing import Any

from tests.channels.matrix.conftest import Person, eventually
from tests.fakes.scripted_model import ScriptedModel, say

LONG = " ".join(f"**Step {n}:** water the plants on the balcony, then the ones in the kitchen." for n in range(12))


async def test_a_long_reply_is_one_message_edited_until_it_is_the_reply(serve: Any, people: Any) -> None:
    ann: Person = await people()
    model = ScriptedModel(lambda messages: say(LONG))
    served = await serve([ann.user_id], model, stream_interval=0.0)
    room = await ann.direct_room(served.bot.user_id)
    await eventually(lambda: _joined(ann, room, served.bot.user_id), "the bot joined")
    await ann.say(room, "how do I water the plants?")

    async def replaced() -> list[dict[str, Any]] | None:
        found = await ann.messages(room, served.bot.user_id)
        last = found[-1] if found else {}
        return found if last.get("m.new_content", {}).get("body") == LONG else None

    contents = await eventually(replaced, "the shown message became the reply")
    originals = [c for c in contents if "m.relates_to" not in c]
    edits = [c for c in contents if c.get("m.relates_to", {}).get("rel_type") == "m.replace"]
    assert len(originals) == 1 and len(originals) + len(edits) == len(contents)  # one message, only edits after
    assert originals[0]["body"].endswith("…") and LONG.startswith(originals[0]["body"][:-2])
    final = edits[-1]["m.new_content"]
    assert final["format"] == "org.matrix.custom.html" and "<strong>Step 0:</strong>" in final["formatted_body"]


async def test_a_short_reply_arrives_whole(serve: Any, people: Any) -> None:
    ann: Person = await people()
    served = await serve([ann.user_id], ScriptedModel(lambda messages: say("Noted.")), stream_interval=0.0)
    room = await ann.direct_room(served.bot.user_id)
    await eventually(lambda: _joined(ann, room, served.bot.user_id), "the bot joined")
    await ann.say(room, "remember the milk")
    [reply] = await eventually(lambda: ann.messages(room, served.bot.user_id), "the reply")
    assert reply["body"] == "Noted." and "m.relates_to" not in reply


async def _joined(person: Person, room: str, user: str) -> bool:
    return (await person.members(room)).get(user) == "join"
