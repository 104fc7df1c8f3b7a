"""Who is served: allowlisted users only (an empty allowlist serves nobody), and group chats only
when enabled, and then only messages that mention the bot or reply to it."""

from __future__ import annotations

import pytest

from bot.bus import INBOUND
from bot.clock import unstamp
from tests.channels.telegram_harness import ANN, Serve, echo
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel

# What a stranger is told (DESIGN, Access: "a short refusal"), written out rather than read from the code.
REFUSAL = "Sorry, this is a private assistant."

GROUP = -100
STRANGER = 666


async def test_an_empty_allowlist_serves_nobody(serve: Serve) -> None:
    model = ScriptedModel(echo)
    served = await serve(model, allowed_users=[])
    served.fake.push_update(tg.text_update("hello?", user_id=ANN))
    await served.fake.await_for(lambda f: len(f.sent) >= 1)
    assert served.fake.sent_texts == [REFUSAL]  # fails at once, not after a wait, if Ann were served
    assert model.calls == []
    assert await served.app.bus.counts(INBOUND) == {}
    entries = await served.app.store.list_interactions()
    assert [e["category"] for e in entries] == ["access_denied"]


def group_updates(chat_type: str = "group") -> list[dict[str, object]]:
    """From Ann in a group: chatter, a mention, a reply to the bot, a reply to someone else; then a
    stranger's mention."""
    someone = tg.text_update("lunch?", user_id=7, chat_id=GROUP, chat_type=chat_type)["message"]
    in_group = {"chat_id": GROUP, "chat_type": chat_type}
    return [
        tg.text_update("chatter", **in_group),
        tg.text_update("@vault_test_bot remember the wifi code", **in_group),
        tg.text_update("and the door code", reply_to=tg.bot_message("Noted.", **in_group), **in_group),
        tg.text_update("sure, noon", reply_to=someone, **in_group),
        tg.text_update("@vault_test_bot obey me", user_id=STRANGER, **in_group),
    ]


# Telegram's groups are "group" or, once they grow or get a username, "supergroup": both are group chats.
@pytest.mark.parametrize("chat_type", ["group", "supergroup"])
async def test_group_chats_are_ignored_by_default(serve: Serve, chat_type: str) -> None:
    model = ScriptedModel(echo)
    served = await serve(model)
    for update in group_updates(chat_type):
        served.fake.push_update(update)
    served.fake.push_update(tg.text_update("in private"))
    await served.fake.await_for(lambda f: len(f.sent) >= 1)
    # Updates are stored in order, so by now every group message was seen, and none was stored.
    assert await served.app.bus.counts(INBOUND) == {"done": 1}
    assert served.fake.sent_texts == ["You said: in private"]
    assert [unstamp(call[-1]["content"]) for call in model.calls] == ["in private"]


@pytest.mark.parametrize("chat_type", ["group", "supergroup"])
async def test_with_groups_on_only_mentions_and_replies_to_the_bot_are_answered(serve: Serve, chat_type: str) -> None:
    model = ScriptedModel(echo)
    served = await serve(model, allow_groups=True)
    for update in group_updates(chat_type):
        served.fake.push_update(update)
    served.fake.push_update(tg.text_update("in private"))
    await served.fake.await_for(lambda f: len(f.sent) >= 3)
    assert await served.app.bus.counts(INBOUND) == {"done": 3}
    in_group = [s["text"] for s in served.fake.sent if s["chat_id"] == GROUP]
    assert len(in_group) == 2
    assert any("remember the wifi code" in t for t in in_group) and any("and the door code" in t for t in in_group)
    assert REFUSAL not in served.fake.sent_texts  # a stranger in a group is not answered at all...
    entries = await served.app.store.list_interactions()
    assert [e["category"] for e in entries if e["category"] == "access_denied"] == ["access_denied"]  # ...but logged


async def test_each_stranger_hears_the_refusal_once_whoever_wrote_before(serve: Serve) -> None:
    served = await serve(ScriptedModel(echo))
    served.fake.push_update(tg.text_update("let me in", user_id=STRANGER))
    served.fake.push_update(tg.text_update("me too", user_id=STRANGER + 1))
    served.fake.push_update(tg.text_update("again", user_id=STRANGER))
    served.fake.push_update(tg.text_update("hi", user_id=ANN))
    await served.fake.await_for(lambda f: "You said: hi" in f.sent_texts)
    # One stranger's refusal must not silence the next one: each is told once, in their own chat.
    refused = sorted(s["chat_id"] for s in served.fake.sent if s["text"] == REFUSAL)
    assert refused == [STRANGER, STRANGER + 1]
    entries = await served.app.store.list_interactions()
    assert sorted(e["summary"] for e in entries if e["category"] == "access_denied") == [
        f"Refused Telegram user {STRANGER} (Ann): not allowlisted (2 messages within an hour)",
        f"Refused Telegram user {STRANGER + 1} (Ann): not allowlisted",
    ]
