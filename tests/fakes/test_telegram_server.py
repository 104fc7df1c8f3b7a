"""The Telegram fake, driven by the real python-telegram-bot."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
import telegram
from telegram.error import BadRequest, Conflict, InvalidToken, RetryAfter

from tests.fakes.telegram_server import DEFAULT_TOKEN, FakeTelegram, photo_update, text_update


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


def make_bot(fake: FakeTelegram, token: str = DEFAULT_TOKEN) -> telegram.Bot:
    return telegram.Bot(token, base_url=fake.base_url, base_file_url=fake.base_file_url)


async def test_get_me(fake: FakeTelegram) -> None:
    async with make_bot(fake) as bot:
        me = await bot.get_me()
    assert (me.id, me.username, me.is_bot, me.first_name) == (999, "vault_test_bot", True, "VaultBot")
    assert fake.calls("getMe")[0].token == DEFAULT_TOKEN


async def test_updates_are_parsed_and_confirmed(fake: FakeTelegram) -> None:
    first = fake.push_update(text_update("/start hello", user_id=7))
    second = fake.push_update(photo_update("ph1", 1234, caption="look"))
    assert second == first + 1
    async with make_bot(fake) as bot:
        updates = await bot.get_updates(timeout=0)
        assert [u.update_id for u in updates] == [first, second]
        msg = updates[0].message
        assert msg is not None and msg.text == "/start hello" and msg.chat.id == 7
        assert msg.entities[0].type == "bot_command"
        assert updates[1].message is not None and updates[1].message.photo[-1].file_id == "ph1"
        again = await bot.get_updates(offset=first + 1, timeout=0)
        assert [u.update_id for u in again] == [second]
        assert await bot.get_updates(offset=second + 1, timeout=0) == ()
        # Confirmed updates are gone for good, even when asking from an older offset.
        assert await bot.get_updates(offset=first, timeout=0) == ()
    assert fake.confirmed_offset == second + 1
    assert fake.get_updates_offsets == [None, first + 1, second + 1, first]


async def test_message_drafts_are_recorded_for_private_chats_only(fake: FakeTelegram) -> None:
    async with make_bot(fake) as bot:
        assert await bot.send_message_draft(42, 7, "Hello wor") is True
        assert await bot.send_message_draft(42, 7, "Hello world", entities=[telegram.MessageEntity("bold", 0, 5)])
        with pytest.raises(BadRequest, match="(?i)textdraft_peer_invalid"):
            await bot.send_message_draft(-100123, 7, "in a group")
        with pytest.raises(BadRequest, match="non-zero"):
            await bot.send_message_draft(42, 0, "no id")
        with pytest.raises(BadRequest, match="too long"):
            await bot.send_message_draft(42, 7, "x" * 4097)
    assert [(d["chat_id"], d["draft_id"], d["text"]) for d in fake.drafts] == [
        (42, 7, "Hello wor"),
        (42, 7, "Hello world"),
    ]
    assert fake.drafts[1]["entities"] == [{"type": "bold", "offset": 0, "length": 5}]
    assert fake.drafts[0]["at"] <= fake.drafts[1]["at"]


async def test_send_message_with_entities_is_recorded(fake: FakeTelegram) -> None:
    async with make_bot(fake) as bot:
        entity = telegram.MessageEntity("bold", 0, 5)
        sent = await bot.send_message(42, "hello world", entities=[entity], reply_to_message_id=5)
        await bot.send_chat_action(42, "typing")
        await bot.set_my_commands([("start", "Start"), ("help", "Help")])
        edited = await bot.edit_message_text("hello again", chat_id=42, message_id=sent.message_id)
    assert sent.text == "hello world" and sent.entities == (entity,) and sent.from_user.id == 999
    assert edited.text == "hello again"
    [record] = fake.sent
    assert record["chat_id"] == 42 and record["text"] == "hello world"
    assert record["entities"] == [{"type": "bold", "offset": 0, "length": 5}]
    assert record["reply_to_message_id"] == 5 and record["message_id"] == sent.message_id
    assert fake.actions == [{"chat_id": 42, "action": "typing"}]
    assert fake.commands == [{"command": "start", "description": "Start"}, {"command": "help", "description": "Help"}]


async def test_numeric_text_stays_a_string(fake: FakeTelegram) -> None:
    async with make_bot(fake) as bot:
        await bot.send_message(42, "42")
    assert fake.sent[0]["text"] == "42"


async def test_fail_next_429_raises_retry_after(fake: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")  # else reading retry_after warns (an error here)
    fake.fail_next("sendMessage", 429, "Too Many Requests: retry after 3", retry_after=3)
    async with make_bot(fake) as bot:
        with pytest.raises(RetryAfter) as info:
            await bot.send_message(42, "hi")
        assert info.value.retry_after.total_seconds() == 3
        await bot.send_message(42, "hi")  # only the next call failed
    assert fake.sent_texts == ["hi"]


async def test_bad_requests(fake: FakeTelegram) -> None:
    # ptb strips "Bad Request: " and capitalises the rest, hence the (?i).
    fake.reject_entities = True
    async with make_bot(fake) as bot:
        with pytest.raises(BadRequest, match="(?i)can't parse entities"):
            await bot.send_message(42, "<b>hi</b>", parse_mode="HTML")
        await bot.send_message(42, "hi")  # plain text still goes through
        with pytest.raises(BadRequest, match="(?i)message is too long"):
            await bot.send_message(42, "\N{GRINNING FACE}" * 2049)  # 4098 UTF-16 code units
        await bot.send_message(42, "x" * 4096)
        with pytest.raises(BadRequest, match="(?i)message text is empty"):
            await bot.send_message(42, "  ")
    assert [len(t) for t in fake.sent_texts] == [2, 4096]


async def test_get_file_and_download(fake: FakeTelegram) -> None:
    fake.add_file("ph1", b"\xff\xd8jpeg bytes", file_path="photos/file_7.jpg")
    fake.add_file("huge", b"x", file_path="documents/huge.pdf", too_big=True)
    async with make_bot(fake) as bot:
        f = await bot.get_file("ph1")
        assert f.file_size == 12
        assert bytes(await f.download_as_bytearray()) == b"\xff\xd8jpeg bytes"
        with pytest.raises(BadRequest, match="(?i)file is too big"):
            await bot.get_file("huge")
        with pytest.raises(BadRequest, match="(?i)invalid file_id"):
            await bot.get_file("nope")


async def test_long_poll_returns_when_an_update_is_pushed(fake: FakeTelegram) -> None:
    async with make_bot(fake) as bot:
        timer = threading.Timer(0.2, fake.push_update, [text_update("late")])
        timer.start()
        started = time.monotonic()
        try:
            updates = await bot.get_updates(timeout=5)
        finally:
            timer.cancel()
            timer.join()
        assert time.monotonic() - started < 4
        assert updates[0].message is not None and updates[0].message.text == "late"


async def test_close_wakes_long_poll_and_wait_helpers(fake: FakeTelegram) -> None:
    async with make_bot(fake) as bot:
        poll = asyncio.create_task(bot.get_updates(timeout=30))
        await fake.await_for(lambda f: len(f.get_updates_offsets) == 1, timeout=5)
        fake.close()
        assert await asyncio.wait_for(poll, 5) == ()
    with pytest.raises(AssertionError, match="not true after"):
        fake.wait_for(lambda f: False, timeout=0.05)


async def test_conflict_and_wrong_token(fake: FakeTelegram) -> None:
    fake.conflict = True
    async with make_bot(fake) as bot:
        with pytest.raises(Conflict, match="(?i)terminated by other getUpdates request"):
            await bot.get_updates(timeout=0)
    with pytest.raises(InvalidToken):
        async with make_bot(fake, token="654321:WRONG") as bot:
            pass
    assert "654321:WRONG" in fake.tokens_seen


async def test_a_long_poll_is_ended_by_a_later_one_with_a_conflict_as_telegram_does(fake: FakeTelegram) -> None:
    fake.conflict_pause = 0.5
    async with make_bot(fake) as first, make_bot(fake) as second:
        waiting = asyncio.create_task(first.get_updates(timeout=20, read_timeout=30))
        await fake.await_for(lambda f: len(f.get_updates_offsets) == 1)
        later = asyncio.create_task(second.get_updates(timeout=20, read_timeout=30))
        with pytest.raises(Conflict, match="terminated by other getUpdates request"):
            await asyncio.wait_for(waiting, 5)  # the one waiting before: at once
        started = time.monotonic()
        again = asyncio.create_task(first.get_updates(timeout=20, read_timeout=30))
        with pytest.raises(Conflict):
            await asyncio.wait_for(later, 5)  # the second conflict within the pause waits it out
        assert time.monotonic() - started >= 0.5
        fake.push_update(text_update("to whoever waits"))
        [update] = await asyncio.wait_for(again, 5)
        assert update.message is not None and update.message.text == "to whoever waits"
        assert await second.get_updates(timeout=0) == (update,)  # not waiting: it ends no one, nor is ended
        assert fake.conflicts == 2


async def test_unknown_method_is_404(fake: FakeTelegram) -> None:
    async with make_bot(fake) as bot:
        with pytest.raises(InvalidToken):  # ptb maps 404 to InvalidToken outside do_api_request
            await bot.send_dice(42)
    assert fake.calls("sendDice")


async def test_a_long_poll_never_returns_an_update_below_its_offset(fake: FakeTelegram) -> None:
    first = fake.push_update(text_update("one"))
    async with make_bot(fake) as bot:
        await bot.get_updates(timeout=0)
        poll = asyncio.create_task(bot.get_updates(offset=first + 1, timeout=5))
        await fake.await_for(lambda f: f.get_updates_offsets[-1:] == [first + 1], timeout=5)
        # Pushed while the poll waits: Telegram would never hand out an update it was told is done.
        with pytest.raises(ValueError, match="below the confirmed offset"):
            fake.push_update({**text_update("one again"), "update_id": first})
        later = fake.push_update(text_update("two"))
        updates = await asyncio.wait_for(poll, 5)
    assert [u.update_id for u in updates] == [later]


async def test_fail_next_can_let_calls_through_first(fake: FakeTelegram) -> None:
    fake.fail_next("sendMessage", 500, "Internal Server Error", skip=1)
    async with make_bot(fake) as bot:
        await bot.send_message(42, "first")
        with pytest.raises(telegram.error.NetworkError):
            await bot.send_message(42, "second")
        await bot.send_message(42, "third")
    assert fake.sent_texts == ["first", "third"]


async def test_get_file_reports_the_declared_size_and_downloads_are_recorded(fake: FakeTelegram) -> None:
    fake.add_file("doc", b"small", file_path="documents/file_3.pdf", file_size=30 * 1024 * 1024)
    async with make_bot(fake) as bot:
        f = await bot.get_file("doc")
        assert f.file_size == 30 * 1024 * 1024
        assert not fake.downloads
        await f.download_as_bytearray()
    assert fake.downloads == ["documents/file_3.pdf"]
