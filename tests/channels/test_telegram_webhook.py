"""Webhook mode: the secret's rules, where it listens by default, and no 200 before the update is
stored (Telegram takes a 200 as "received" and never sends that update again)."""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import sqlite3

import pytest

from bot.bus import INBOUND
from bot.http_server import CannotListen
from bot.settings import SettingsError, load_settings
from tests.channels.telegram_harness import Serve, before_publish, echo, free_port, post, post_declared
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel

URL = "https://bot.example.org/hook"
SECRET = "s3cret-token-of-sixteen"


def webhook_env(monkeypatch: pytest.MonkeyPatch, secret: str | None) -> None:
    monkeypatch.setenv("VAULTBOT_TELEGRAM__TOKEN", tg.DEFAULT_TOKEN)
    monkeypatch.setenv("VAULTBOT_TELEGRAM__ALLOWED_USERS", "[42]")
    monkeypatch.setenv("VAULTBOT_TELEGRAM__WEBHOOK_URL", URL)
    if secret is not None:
        monkeypatch.setenv("VAULTBOT_TELEGRAM__WEBHOOK_SECRET", secret)


@pytest.mark.parametrize("secret", ["a" * 16, "A-z_0-9" * 36 + "abcd", "x" * 256])
def test_a_secret_of_16_to_256_letters_digits_underscores_and_dashes_is_accepted(
    monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    webhook_env(monkeypatch, secret)
    settings = load_settings()
    assert settings.telegram.webhook_secret is not None
    assert settings.telegram.webhook_secret.get_secret_value() == secret


@pytest.mark.parametrize(
    "secret",
    [
        "a" * 15,
        "x" * 257,
        "sixteen chars with spaces",
        "sixteen-chars-but-ümlaut",
        "sixteen/chars/slashed",
        "dots.are.not.allowed",
    ],
)
def test_a_secret_of_another_shape_is_refused_without_echoing_it(monkeypatch: pytest.MonkeyPatch, secret: str) -> None:
    webhook_env(monkeypatch, secret)
    with pytest.raises(SettingsError) as refused:
        load_settings()
    message = str(refused.value)
    assert "VAULTBOT_TELEGRAM__WEBHOOK_SECRET" in message and "16 to 256" in message
    assert secret not in message and "\n" not in message


def test_a_webhook_url_without_a_secret_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    webhook_env(monkeypatch, None)
    with pytest.raises(SettingsError, match="WEBHOOK_SECRET"):
        load_settings()


def test_it_listens_on_127_0_0_1_port_8443_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    webhook_env(monkeypatch, SECRET)
    telegram = load_settings().telegram
    assert (telegram.webhook_listen, telegram.webhook_port) == ("127.0.0.1", 8443)


async def test_the_default_listen_address_is_not_reachable_from_other_addresses(serve: Serve) -> None:
    port = free_port()
    served = await serve(ScriptedModel(echo), webhook_url=URL, webhook_secret=SECRET, webhook_port=port)
    await served.fake.await_for(lambda f: f.webhook is not None)
    update = json.dumps({**tg.text_update("local only"), "update_id": 7}).encode()
    assert await post(port, update, SECRET) == 200
    # Any other address of this machine (127.0.0.2 is one on Linux) finds nothing listening there.
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.2", port)) == errno.ECONNREFUSED


async def test_a_post_is_answered_200_only_once_the_update_is_stored(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    served = await serve(ScriptedModel(echo), webhook_url=URL, webhook_secret=SECRET, webhook_port=port)
    await served.fake.await_for(lambda f: f.webhook is not None)
    failures = [sqlite3.OperationalError("disk I/O error")]

    async def disk_fails_once() -> None:
        if failures:
            raise failures.pop()

    before_publish(monkeypatch, served.app.bus, 4242, disk_fails_once)
    update = json.dumps({**tg.text_update("via webhook"), "update_id": 4242}).encode()
    assert await post(port, update, SECRET) == 500  # not stored: Telegram will post it again
    assert await served.app.bus.counts(INBOUND) == {}
    assert await post(port, update, SECRET) == 200
    assert await served.app.bus.counts(INBOUND) != {}
    await served.fake.await_for(lambda f: f.sent_texts == ["You said: via webhook"])


async def test_an_update_posted_again_is_answered_once_even_when_the_channel_answers_it(serve: Serve) -> None:
    # Telegram posts an update again when it missed the 200; replies the channel gives itself (an
    # unsupported kind, a file over the limit) are keyed by the update too, so the user hears them once.
    port = free_port()
    served = await serve(ScriptedModel(echo), webhook_url=URL, webhook_secret=SECRET, webhook_port=port)
    await served.fake.await_for(lambda f: f.webhook is not None)
    sticker = json.dumps({**tg.sticker_update(), "update_id": 7001}).encode()
    too_big = {**tg.document_update("big", "video.mov", "video/quicktime", 50 * 1024 * 1024), "update_id": 7002}
    for update in (sticker, sticker, json.dumps(too_big).encode(), json.dumps(too_big).encode()):
        assert await post(port, update, SECRET) == 200
    assert await post(port, json.dumps({**tg.text_update("still there?"), "update_id": 7003}).encode(), SECRET) == 200
    await served.fake.await_for(lambda f: "You said: still there?" in f.sent_texts)
    texts = served.fake.sent_texts
    assert len(texts) == 3, texts
    assert sum("can't handle this kind of message (sticker)" in t for t in texts) == 1
    assert sum("too big" in t for t in texts) == 1


async def test_bodies_that_are_no_update_are_refused_and_the_next_update_is_stored(serve: Serve) -> None:
    port = free_port()
    served = await serve(ScriptedModel(echo), webhook_url=URL, webhook_secret=SECRET, webhook_port=port)
    await served.fake.await_for(lambda f: f.webhook is not None)
    for body in (b"{not json", b"[1, 2]", json.dumps({"message": {"text": "no update_id"}}).encode()):
        assert await post(port, body, SECRET) == 400
    # Past 1 MiB: an update is a few kilobytes, so this is no update; it is refused from its headers,
    # before any of its body is read.
    assert await post_declared(port, 2 * 1024 * 1024, SECRET) == 413
    assert await post_declared(port, 2 * 1024 * 1024, "wrong-secret-wrong-secret") == 403
    assert await served.app.bus.counts(INBOUND) == {}
    assert await post(port, json.dumps({**tg.text_update("after the junk"), "update_id": 10}).encode(), SECRET) == 200
    await served.fake.await_for(lambda f: f.sent_texts == ["You said: after the junk"])


async def test_a_webhook_port_in_use_is_one_clear_error_before_telegram_is_told(serve: Serve) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        served = await serve(ScriptedModel(echo), webhook_url=URL, webhook_secret=SECRET, webhook_port=port)
        with pytest.raises(ExceptionGroup) as failed:  # what `vaultbot run` prints on one line
            await asyncio.wait_for(served.task, 10)
    [refused] = failed.value.exceptions
    assert isinstance(refused, CannotListen)
    assert str(refused) == f"cannot serve the Telegram webhook on 127.0.0.1:{port}: Address already in use"
    assert served.fake.webhook is None and not served.fake.calls("setWebhook")


def nested(depth: int, inside: str = "1") -> str:
    return "[" * depth + inside + "]" * depth


@pytest.mark.parametrize(
    "body",
    [
        nested(200_000),  # past Python's recursion limit: the parser itself gives up
        nested(100_000, '{"a": ') + "}" * 100_000,
        # Parsed, but no update is nested like this: the rest of the way would have to walk it.
        json.dumps({**tg.text_update("deep"), "update_id": 11})[:-1] + ', "extra": ' + nested(900) + "}",
        json.dumps({**tg.text_update("deep"), "update_id": 12})[:-1] + ', "extra": ' + nested(65) + "}",
    ],
    ids=["brackets-200000", "objects-100000", "inside-an-update-900", "inside-an-update-65"],
)
async def test_deeply_nested_json_with_the_secret_is_refused_400_and_the_next_update_is_stored(
    serve: Serve, body: str
) -> None:
    port = free_port()
    served = await serve(ScriptedModel(echo), webhook_url=URL, webhook_secret=SECRET, webhook_port=port)
    await served.fake.await_for(lambda f: f.webhook is not None)
    assert await post(port, body.encode(), SECRET) == 400  # not 500: Telegram would post it again and again
    assert await served.app.bus.counts(INBOUND) == {}
    assert await post(port, json.dumps({**tg.text_update("after the depths"), "update_id": 20}).encode(), SECRET) == 200
    await served.fake.await_for(lambda f: f.sent_texts == ["You said: after the depths"])


async def test_an_update_nested_as_deep_as_telegram_nests_them_is_stored(serve: Serve) -> None:
    port = free_port()
    served = await serve(ScriptedModel(echo), webhook_url=URL, webhook_secret=SECRET, webhook_port=port)
    await served.fake.await_for(lambda f: f.webhook is not None)
    update = {**tg.text_update("keyboard"), "update_id": 30}
    update["message"]["extra"] = json.loads(nested(40))  # deeper than any update Telegram sends
    assert await post(port, json.dumps(update).encode(), SECRET) == 200
    await served.fake.await_for(lambda f: f.sent_texts == ["You said: keyboard"])
