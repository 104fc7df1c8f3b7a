"""A run that asks waits as data, not as a worker: the timeout and a new message decline it, and the
answer goes on with it exactly once, across a failure before the call and one during it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.consent import Questions
from tests.consent.conftest import BANK, Attack, Attacked
from tests.consent.obedient import orders
from tests.consent.test_attacks import DONE, SOURCES, steps


def shown(bot: Attacked, question: dict[str, Any]) -> list[str]:
    """What the buttons under a question say now."""
    message = bot.fake.message(question["chat_id"], question["message_id"])
    assert message is not None
    return [b["text"] for row in message["reply_markup"]["inline_keyboard"] for b in row]


async def run_of(bot: Attacked) -> dict[str, Any]:
    [row] = await bot.app.db.fetchall("SELECT run_id FROM consent_questions")
    run = await bot.app.store.get_run(row["run_id"])
    assert run is not None
    return run


async def test_a_run_that_asks_is_waiting_and_holds_no_worker(attacked: Attack) -> None:
    bot = await attacked()
    SOURCES["forward"](bot, orders(steps(bot)["clip query string"]))
    await bot.question()
    await bot.settled()
    assert (await run_of(bot))["status"] == "waiting"
    # The conversation goes on while it waits: a command is answered at once.
    bot.say("/status")
    await bot.settled()
    assert any("capture" in m["text"] or "mode" in m["text"].lower() for m in bot.fake.sent[-1:])


async def test_no_answer_within_the_timeout_declines_and_the_model_reads_it_next(attacked: Attack) -> None:
    bot = await attacked(consent={"timeout": 0.5})
    SOURCES["forward"](bot, orders(steps(bot)["clip query string"]))
    question = await bot.question()
    await bot.fake.await_for(lambda f: shown(bot, question) == ["⌛ Not answered in time: declined"], timeout=30)
    run = await run_of(bot)
    assert run["status"] == "stopped" and "did not answer in time" in run["reason"]
    bot.say("so, what did you do?")
    await bot.settled()
    history = json.dumps(bot.model.calls[-1])
    assert "did not allow this call" in history and "did not answer in time" in history
    assert bot.collected() == 0


async def test_a_new_message_declines_the_question_and_a_late_tap_is_told(attacked: Attack) -> None:
    bot = await attacked()
    SOURCES["forward"](bot, orders(steps(bot)["clip query string"]))
    question = await bot.question()
    bot.say("never mind, what's for dinner?")
    await bot.settled()
    assert shown(bot, question) == ["↪ Declined: you sent a new message"]
    assert "sent a new message instead of answering" in json.dumps(bot.model.calls[-1])
    bot.tap_shown(question)
    await bot.fake.await_for(lambda f: len(f.answers) == 1)
    assert bot.fake.answers[0]["text"] == "Already decided: ↪ Declined: you sent a new message."
    await bot.settled()
    assert bot.collected() == 0 and (await run_of(bot))["status"] == "stopped"


async def test_an_answer_that_fails_before_the_call_is_handled_again_and_the_call_made_once(
    attacked: Attack, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = await attacked()
    failed: list[str] = []
    start_call = Questions.start_call

    async def failing_once(self: Questions, question_id: str) -> Any:
        if not failed:
            failed.append(question_id)
            raise OSError("disk I/O error")  # as a crash between the tap and the call would stop it
        return await start_call(self, question_id)

    monkeypatch.setattr(Questions, "start_call", failing_once)
    SOURCES["forward"](bot, orders(steps(bot)["clip query string"]))
    bot.tap(await bot.question(), "Allow")
    await bot.fake.await_for(lambda f: any(m["text"] == DONE for m in f.sent), timeout=30)
    await bot.settled()
    assert failed and bot.collected() == 1 and bot.web.queries["/collect"] == [f"d={BANK}"]
    assert [m["text"] for m in bot.fake.sent].count(DONE) == 1


async def test_a_call_cut_off_while_it_was_made_is_not_made_again(
    attacked: Attack, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = await attacked()
    record = Questions.record_outcome
    failed: list[str] = []

    async def lost_once(self: Questions, question_id: str, outcome: dict[str, Any]) -> None:
        if not failed:
            failed.append(question_id)
            raise OSError("disk I/O error")  # the call was made; its result was never kept
        await record(self, question_id, outcome)

    monkeypatch.setattr(Questions, "record_outcome", lost_once)
    SOURCES["forward"](bot, orders(steps(bot)["clip query string"]))
    bot.tap(await bot.question(), "Allow")
    await bot.fake.await_for(lambda f: any(m["text"] == DONE for m in f.sent), timeout=30)
    await bot.settled()
    assert bot.collected() == 1  # made once; the retry of the answer did not make it again
    assert "may or may not have happened" in json.dumps(bot.model.calls[-1])


async def test_an_answer_that_never_goes_through_ends_its_run_told_and_closed(
    attacked: Attack, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = await attacked(bus={"max_attempts": 2, "backoff_seconds": 0.01, "backoff_max_seconds": 0.01})

    async def broken(self: Questions, question_id: str) -> Any:
        raise OSError("disk I/O error")  # on every attempt: the answer is dead-lettered

    monkeypatch.setattr(Questions, "start_call", broken)
    SOURCES["forward"](bot, orders(steps(bot)["clip query string"]))
    bot.tap(await bot.question(), "Allow")
    gave_up = "I could not go on after your answer (clip_link): an internal error, which was logged."
    await bot.fake.await_for(lambda f: gave_up in f.sent_texts, timeout=30)
    await bot.settled()
    run = await run_of(bot)
    assert run["status"] == "failed" and "not answered after the person's answer (allowed)" in run["reason"]
    logged = await bot.app.store.list_interactions(limit=50)
    assert any(i["category"] == "error" and "allowed clip_link" in i["summary"] for i in logged)
    assert bot.collected() == 0 and bot.fake.sent_texts.count(gave_up) == 1
    # The next message reads the stopped run as over, with the call not made.
    bot.say("so, did you send it?")
    await bot.settled()
    history = json.dumps(bot.model.calls[-1])
    assert "Not made: vaultbot could not go on after the person allowed this call" in history
    assert "Run stopped: not answered" in history


async def test_an_answer_that_decides_nothing_leaves_the_question_open_and_says_so(
    attacked: Attack, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = await attacked(bus={"max_attempts": 2, "backoff_seconds": 0.01, "backoff_max_seconds": 0.01})
    decide = Questions.decide
    broken: list[str] = []

    async def failing(self: Questions, question_id: str, *args: Any, **kwargs: Any) -> Any:
        if len(broken) < 2:  # both attempts of the first tap
            broken.append(question_id)
            raise OSError("disk I/O error")
        return await decide(self, question_id, *args, **kwargs)

    monkeypatch.setattr(Questions, "decide", failing)
    SOURCES["forward"](bot, orders(steps(bot)["clip query string"]))
    question = await bot.question()
    bot.tap(question, "Deny")
    again = (
        "I could not take your answer: an internal error, which was logged. The question is still open: "
        "answer it again, or send a new message."
    )
    await bot.fake.await_for(lambda f: again in f.sent_texts, timeout=30)
    await bot.settled()
    assert (await run_of(bot))["status"] == "waiting" and shown(bot, question) == ["Allow", "Deny"]
    bot.tap(question, "Deny")  # the second tap is taken
    await bot.fake.await_for(lambda f: shown(bot, question) == ["✋ Denied"], timeout=30)
    await bot.settled()
    assert bot.collected() == 0


async def test_a_decided_questions_expiry_timer_is_not_counted_as_a_message_waiting(attacked: Attack) -> None:
    from bot.cli.doctor import diagnose
    from bot.store import StoreReader

    bot = await attacked()
    SOURCES["forward"](bot, orders(steps(bot)["clip query string"]))
    await bot.question()
    bot.say("never mind, what's for dinner?")
    await bot.settled()
    timers = await bot.app.db.fetchall("SELECT status FROM bus_messages WHERE dedupe_key LIKE 'question-expiry:%'")
    assert [row["status"] for row in timers] == ["pending"]  # the timer is still due, with nothing to do

    counts = await StoreReader(bot.app.db).message_counts()  # what the Health page shows
    assert counts.get("pending", 0) + counts.get("leased", 0) == 0
    [database] = [check for check in await diagnose(bot.app.settings) if check.name == "database"]
    assert "0 message(s) waiting" in database.detail
