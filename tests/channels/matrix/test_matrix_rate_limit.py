"""A homeserver that answers 429 is obeyed: the reply waits in the outbox for the time it asked and is
then sent, once."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.channels.matrix.conftest import Person, eventually
from tests.fakes.synapse import Synapse


async def test_a_429_is_waited_out_and_every_reply_is_sent_once(serve: Any, people: Any, synapse: Synapse) -> None:
    ann: Person = await people()
    served = await serve([ann.user_id])
    room = await ann.direct_room(served.bot.user_id)
    await eventually(lambda: _joined(ann, room, served.bot.user_id), "the bot joined")
    # One message at once, then one a second: replies made at once meet a 429 with retry_after_ms.
    await asyncio.to_thread(synapse.limit_messages, served.bot.user_id, 1, 1)
    for text in ("buy bread", "buy eggs", "buy milk"):
        await ann.say(room, text)

    async def three() -> list[dict[str, Any]] | None:
        found = await ann.messages(room, served.bot.user_id)
        return found if len(found) >= 3 else None

    replies = await eventually(three, "every reply was sent", 60)
    assert sorted(r["body"].split(".md")[0] for r in replies) == [
        "Saved to Inbox/buy bread",
        "Saved to Inbox/buy eggs",
        "Saved to Inbox/buy milk",
    ]

    async def acked() -> list[Any] | None:
        rows = await served.app.db.fetchall("SELECT status, attempts FROM bus_messages WHERE topic = 'outbound:matrix'")
        return rows if [r["status"] for r in rows] == ["done"] * 3 else None

    rows = await eventually(acked, "every reply was acked")
    assert max(r["attempts"] for r in rows) > 1  # one was refused with a 429 and sent when it was due


async def _joined(person: Person, room: str, user: str) -> bool:
    return (await person.members(room)).get(user) == "join"
