"""Albums: the photos of one media_group_id reach the model as one message, however Telegram spaces
their updates, and exactly once across a crash between two parts (a real `vaultbot run` killed)."""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bot.app import App
from bot.bus import INBOUND
from tests.channels.telegram_harness import RunVaultbot, Serve, bus_statuses, stop, wait_until
from tests.fakes import anthropic_server as api
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers import SEVERAL_PROCESSES
from tests.images.pictures import QUADRANTS, close, jpeg, quadrant_colours, seen_images, text_of, upright

# The album's quiet period in these tests (VAULTBOT_TELEGRAM__ALBUM_WAIT): longer than storing one part
# takes (its photo fetched and made ready) on a busy machine, where 0.5 s split albums.
WAIT = 3.0


def inbound(db: Path) -> list[str]:
    """The inbound messages' statuses on disk ([] until the store is created)."""
    try:
        return bus_statuses(db, INBOUND)
    except sqlite3.OperationalError:  # the process is still creating the tables
        return []


def album_part(fake: FakeTelegram, message_id: int, group: str = "album-1", caption: str | None = None) -> int:
    data = jpeg(upright(), orientation=1 + message_id % 8)
    fake.add_file(f"al{message_id}", data, file_path=f"photos/file_{message_id}.jpg")
    update = tg.photo_update(f"al{message_id}", len(data), caption=caption, media_group_id=group, message_id=message_id)
    return fake.push_update(update)


async def serve_claude(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, anthropic: FakeAnthropic
) -> App:
    anthropic.handler = lambda body: api.text("Three photos, got them.")
    claude = {"anthropic_api_key": "sk-ant-test", "anthropic_base_url": anthropic.base_url}
    app = await make_app(None, telegram=fake.settings(album_wait=WAIT), model={"name": "claude-test"}, **claude)
    await serve(app=app)
    return app


def assert_one_turn_with_the_album(anthropic: FakeAnthropic, ids: list[int]) -> None:
    [request] = anthropic.requests
    said = request.body["messages"][-1]
    images = seen_images({"messages": [said]})
    assert len(images) == len(ids)
    for image in images:  # each upright, whatever its EXIF orientation
        assert all(close(c, q) for c, q in zip(quadrant_colours(image), QUADRANTS, strict=True))
    text = text_of(said)
    assert [f"[Image: Attachments/photo {i}.jpg]" in text for i in ids] == [True] * len(ids)
    assert "the kitchen, before and after" in text


async def test_an_album_in_one_batch_reaches_the_model_as_one_message(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    await serve_claude(serve, make_app, fake, fake_anthropic)
    album_part(fake, 201, caption="the kitchen, before and after")
    album_part(fake, 202)
    album_part(fake, 203)
    await fake.await_for(lambda f: len(f.sent) == 1)
    assert_one_turn_with_the_album(fake_anthropic, [201, 202, 203])
    assert fake.sent_texts == ["Three photos, got them."]


async def test_an_album_spread_over_separate_polls_waits_for_its_last_part(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    app = await serve_claude(serve, make_app, fake, fake_anthropic)
    stored = 0
    last_stored = 0.0
    for message_id in (211, 212, 213):
        update_id = album_part(fake, message_id, caption="the kitchen, before and after" if message_id == 211 else None)
        # Each part in a getUpdates batch of its own: the next is pushed once this one is confirmed.
        await fake.await_for(lambda f, u=update_id: f.confirmed_offset > u)
        stored += 1
        assert (await app.bus.counts(INBOUND)).get("pending") == stored  # durable, and held back
        last_stored = time.monotonic()
    await fake.await_for(lambda f: len(f.sent) == 1)
    assert_one_turn_with_the_album(fake_anthropic, [211, 212, 213])
    assert time.monotonic() - last_stored >= WAIT * 0.9  # the quiet period ran from the last part
    assert (await app.bus.counts(INBOUND)) == {"done": 3}


async def test_two_albums_and_a_text_between_them_are_three_turns_in_order(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    await serve_claude(serve, make_app, fake, fake_anthropic)
    album_part(fake, 221, group="a")
    album_part(fake, 222, group="a")
    fake.push_update(tg.text_update("and now the garden"))
    album_part(fake, 223, group="b")
    album_part(fake, 224, group="b")
    await fake.await_for(lambda f: len(f.sent) == 3)
    counts = [len(seen_images({"messages": r.body["messages"][-1:]})) for r in fake_anthropic.requests]
    assert counts == [2, 0, 2]
    assert text_of(fake_anthropic.requests[1].body["messages"][-1]).endswith("and now the garden")


@SEVERAL_PROCESSES
def test_an_album_cut_by_a_crash_between_two_parts_is_one_turn_run_once(
    tmp_path: Path, fake: FakeTelegram, fake_anthropic: FakeAnthropic, vaultbot_run: RunVaultbot
) -> None:
    fake_anthropic.handler = lambda body: api.text("Three photos, got them.")
    env = {
        "VAULTBOT_TELEGRAM__TOKEN": tg.DEFAULT_TOKEN,
        "VAULTBOT_TELEGRAM__ALLOWED_USERS": "[42]",
        "VAULTBOT_TELEGRAM__BASE_URL": fake.base_url,
        "VAULTBOT_TELEGRAM__BASE_FILE_URL": fake.base_file_url,
        # Long enough for the second process to start and poll before the first part is due, on a busy
        # machine too, where a start can take ten times its 1-2 s. The test waits this long, once.
        "VAULTBOT_TELEGRAM__ALBUM_WAIT": "30",
        "ANTHROPIC_API_KEY": "sk-ant-crash-test",
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
    }
    db = tmp_path / "data" / "vaultbot.db"
    first_part = album_part(fake, 231, caption="the kitchen, before and after")
    first = vaultbot_run(**env)
    wait_until(lambda: inbound(db) == ["pending"], "the first part was stored", first)
    wait_until(lambda: fake.confirmed_offset > first_part, "the first part was confirmed", first)
    stop(first, signal.SIGKILL)  # before the rest of the album arrives

    album_part(fake, 232)
    album_part(fake, 233)
    second = vaultbot_run(**env)
    wait_until(lambda: inbound(db) == ["done"] * 3, "the album was answered", second, timeout=90)
    wait_until(lambda: len(fake.sent) == 1, "the reply was sent", second)
    errors = stop(second)
    assert second.returncode == 0, errors
    assert_one_turn_with_the_album(fake_anthropic, [231, 232, 233])
    assert fake.sent_texts == ["Three photos, got them."]
    assert sorted(p.name for p in (tmp_path / "data" / "vault" / "Attachments").iterdir()) == [
        "photo 231.jpg",
        "photo 232.jpg",
        "photo 233.jpg",
    ]
