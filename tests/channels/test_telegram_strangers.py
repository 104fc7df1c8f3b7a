"""A flood of strangers costs bounded disk and Telegram calls: each stranger is answered once an
hour and counted in one entry of the interaction log, and past 100 strangers in an hour the rest
are counted together, unanswered. The person still sees in `vaultbot log` who tried and how often."""

from __future__ import annotations

import asyncio
import json
import time

from click.testing import CliRunner

from bot.bus import INBOUND, outbound_topic
from bot.channels.telegram.access import REFUSAL
from bot.cli import cli
from tests.channels.telegram_harness import ANN, Serve, Served, echo
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel

STRANGER = 666


async def all_sent(served: Served) -> None:
    """Wait until Ann's reply is sent and nothing is left in the outbox."""
    await served.fake.await_for(lambda f: "You said: hi" in f.sent_texts, timeout=30)
    deadline = time.monotonic() + 30
    while set(await served.app.bus.counts(outbound_topic("telegram"))) != {"done"}:
        assert time.monotonic() < deadline, "the outbox did not drain"
        await asyncio.sleep(0.01)


async def access_denied(served: Served) -> list[dict[str, object]]:
    """What `vaultbot log --json` shows of the refusals (in a thread: the command runs its own event loop)."""
    env = {"VAULTBOT_STORE__PATH": str(served.app.settings.store.path)}
    done = await asyncio.to_thread(CliRunner().invoke, cli, ["log", "--json", "--limit", "1000"], env=env)
    assert done.exit_code == 0, done.output
    return [entry for entry in json.loads(done.stdout) if entry["category"] == "access_denied"]


async def test_a_stranger_flooding_the_bot_is_answered_once_and_logged_once_with_a_count(serve: Serve) -> None:
    served = await serve(ScriptedModel(echo))
    for n in range(300):
        served.fake.push_update(tg.text_update(f"let me in {n}", user_id=STRANGER, first_name="Mallory"))
    served.fake.push_update(tg.text_update("hi", user_id=ANN))
    await all_sent(served)
    assert [s["chat_id"] for s in served.fake.sent] == [STRANGER, ANN]
    assert served.fake.sent_texts == [REFUSAL, "You said: hi"]
    [entry] = await access_denied(served)
    assert entry["summary"] == "Refused Telegram user 666 (Mallory): not allowlisted (300 messages within an hour)"
    assert entry["conversation"] == f"telegram:{STRANGER}"
    assert await served.app.bus.counts(INBOUND) == {"done": 1}  # none of them reached the model


async def test_past_100_strangers_in_an_hour_the_rest_are_counted_together_and_not_answered(serve: Serve) -> None:
    served = await serve(ScriptedModel(echo))
    for n in range(130):
        served.fake.push_update(tg.text_update("let me in", user_id=10_000 + n, first_name=f"Bot {n}"))
    for n in range(100, 130):  # the ones past the cap, again
        served.fake.push_update(tg.text_update("again", user_id=10_000 + n, first_name=f"Bot {n}"))
    served.fake.push_update(tg.text_update("hi", user_id=ANN))
    await all_sent(served)
    refused = sorted(s["chat_id"] for s in served.fake.sent if s["text"] == REFUSAL)
    assert refused == [10_000 + n for n in range(100)]
    entries = await access_denied(served)
    assert len(entries) == 101
    assert entries[0]["summary"] == (
        "Refused 60 messages from more strangers on telegram: past 100 strangers within an hour, the rest are "
        "counted here and not answered"
    )
    assert {e["summary"] for e in entries[1:]} == {
        f"Refused Telegram user {10_000 + n} (Bot {n}): not allowlisted" for n in range(100)
    }


async def test_vaultbot_log_shows_a_strangers_name_without_its_control_characters(serve: Serve) -> None:
    served = await serve(ScriptedModel(echo))
    served.fake.push_update(tg.text_update("let me in", user_id=STRANGER, first_name="Mallory\x1b[2J\x1b[31m"))
    served.fake.push_update(tg.text_update("hi", user_id=ANN))
    await all_sent(served)
    env = {"VAULTBOT_STORE__PATH": str(served.app.settings.store.path)}
    done = await asyncio.to_thread(CliRunner().invoke, cli, ["log"], env=env)
    assert done.exit_code == 0, done.output
    assert "Mallory\\x1b[2J\\x1b[31m" in done.stdout and "\x1b" not in done.stdout
