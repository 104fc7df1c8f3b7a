"""A message the model could not answer is never only in the dead-letter queue: it is filed as capture
mode files it, the user is told where in one line, the log carries its text and the id `vaultbot retry`
takes, once across crashes; and a retry answers it as if it had just arrived. The real SDK talks to
the fake Messages API; the bus, store and vault are real."""

from __future__ import annotations

import errno
import io
import socket
from collections.abc import Awaitable, Callable

import pytest

from bot.app import App
from bot.bus import INBOUND, Delivery
from bot.cli.retry import NothingToRetry, retry
from bot.store import DeadLetters, UnknownDeadLetter
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import DiskFaults, outbox, run_inbox
from tests.runner.conftest import said, send

AppFactory = Callable[..., Awaitable[App]]


def inbox_notes(app: App) -> list[str]:
    return sorted(p.name for p in (app.notes.root / "Inbox").glob("*.md"))


async def the_dead_letter_notice(app: App) -> str:
    [line] = [m.text for m in await outbox(app) if m.kind == "notice" and "vaultbot retry" in m.text]
    return line


@pytest.mark.parametrize(
    ("failure", "told"),
    [
        (api.status(500), "after 3 attempts"),
        (api.status(529, "overloaded_error"), "after 3 attempts"),
        (api.status(401, "authentication_error"), "ANTHROPIC_API_KEY"),
        (api.status(402, "billing_error"), "spend limit"),
        (api.status(403, "permission_error"), "permissions"),
    ],
    ids=["500", "529", "401", "402", "403"],
)
async def test_a_message_the_model_cannot_answer_is_filed_and_told_where_in_one_line(
    app: App, fake_anthropic: FakeAnthropic, failure: api.Canned, told: str
) -> None:
    fake_anthropic.handler = lambda body: failure
    await send(app, "buy oat milk on the way home")
    await run_inbox(app)

    note = app.notes.root / "Inbox" / "buy oat milk on the way home.md"
    assert "buy oat milk on the way home" in note.read_text()
    line = await the_dead_letter_notice(app)
    assert "\n" not in line and told in line
    assert "saved in your vault as Inbox/buy oat milk on the way home.md" in line
    [letter] = await DeadLetters(app.db).waiting()
    assert f"`vaultbot retry {letter.run_id[:8]}`" in line
    # The log entry carries the message and the run that filed it; that run is the dead letter's id.
    [entry] = await app.store.list_interactions()
    assert "buy oat milk on the way home" in entry["summary"] and entry["run_id"] == letter.run_id
    assert "Captured" not in entry["summary"]
    [filing] = [r for r in await app.store.list_runs() if r["status"] == "dead_lettered"]
    assert filing["id"] == letter.run_id and "Inbox/buy oat milk on the way home.md" in filing["reason"]


async def test_an_unreachable_api_dead_letter_is_filed_too(make_app: AppFactory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=f"http://127.0.0.1:{closed_port}",
        model={"sdk_max_retries": 0, "timeout": 5},
    )
    await send(app, "call the plumber")
    await run_inbox(app)
    assert inbox_notes(app) == ["call the plumber.md"]
    assert "saved in your vault as Inbox/call the plumber.md" in await the_dead_letter_notice(app)


async def test_a_dead_letter_that_cannot_be_filed_says_so_and_is_never_called_saved(
    app: App, fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_anthropic.handler = lambda body: api.status(500)
    DiskFaults(monkeypatch, error=PermissionError(errno.EACCES, "Permission denied"))
    await send(app, "buy oat milk")
    await run_inbox(app)

    line = await the_dead_letter_notice(app)
    assert "could not save it in your vault either" in line and "saved in your vault as" not in line
    [entry] = await app.store.list_interactions()
    assert "could not be filed" in entry["summary"] and "buy oat milk" in entry["summary"]
    [letter] = await DeadLetters(app.db).waiting()
    assert letter.path is None
    statuses = {r["id"]: r["status"] for r in await app.store.list_runs()}
    assert statuses[letter.run_id] == "failed"


async def test_a_dead_letter_handled_again_after_a_crash_is_filed_and_told_once(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.handler = lambda body: api.status(500)
    await send(app, "buy oat milk")
    await run_inbox(app)
    [row] = await app.bus.dead_letters(INBOUND)
    delivery = Delivery(row["id"], INBOUND, row["conversation"], row["payload"], row["attempts"] + 1)
    # A process that died after filing but before the bus recorded the message as dead: the message is
    # redelivered past its attempts and dead-lettered again.
    await app.handler.on_dead(delivery, RuntimeError("its worker stopped"))

    assert inbox_notes(app) == ["buy oat milk.md"]
    assert len([m for m in await outbox(app) if "vaultbot retry" in m.text]) == 1
    assert len(await app.store.list_interactions()) == 1
    assert len(await DeadLetters(app.db).waiting()) == 1


async def test_a_crash_between_filing_and_recording_files_no_second_note(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    # What such a crash leaves: the note on disk, nothing recorded. Filing it again finds the same note.
    (app.notes.root / "Inbox").mkdir()
    fake_anthropic.handler = lambda body: api.status(500)
    first = await send(app, "buy oat milk")
    await run_inbox(app)
    [letter] = await DeadLetters(app.db).waiting()
    await app.db.execute("DELETE FROM dead_letters")
    await app.db.execute("DELETE FROM interactions")
    [row] = await app.bus.dead_letters(INBOUND)
    delivery = Delivery(row["id"], INBOUND, row["conversation"], row["payload"], row["attempts"] + 1)
    await app.handler.on_dead(delivery, RuntimeError("its worker stopped"))

    assert inbox_notes(app) == ["buy oat milk.md"]
    assert first.id in row["payload"] and letter.path == "Inbox/buy oat milk.md"
    [again] = await DeadLetters(app.db).waiting()
    assert again.path == "Inbox/buy oat milk.md"


async def test_retry_answers_the_message_telling_the_model_where_it_was_filed(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.handler = lambda body: api.status(500)
    await send(app, "what should I cook tonight?")
    await run_inbox(app)
    [letter] = await DeadLetters(app.db).waiting()
    asked_before = len(fake_anthropic.requests)

    fake_anthropic.handler = lambda body: api.text("Try the lentil soup.")
    out = io.StringIO()
    assert await retry(app, [letter.run_id[:6]], out) is True

    assert f"{letter.run_id[:8]}: answered" in out.getvalue()
    [request] = fake_anthropic.requests[asked_before:]
    asked = said(request.body["messages"][-1])
    assert "what should I cook tonight?" in asked
    assert "Inbox/what should I cook tonight.md" in asked
    assert [m.text for m in await outbox(app) if m.kind == "reply"] == ["Try the lentil soup."]
    assert inbox_notes(app) == ["what should I cook tonight.md"]
    assert await DeadLetters(app.db).waiting() == []
    with pytest.raises(NothingToRetry):
        await retry(app, [], io.StringIO())
    with pytest.raises(UnknownDeadLetter, match="already sent again"):
        await retry(app, [letter.run_id], io.StringIO())


async def test_a_retry_that_fails_again_becomes_a_new_dead_letter_without_a_second_note(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.handler = lambda body: api.status(500)
    await send(app, "buy oat milk")
    await run_inbox(app)
    [first] = await DeadLetters(app.db).waiting()
    out = io.StringIO()
    assert await retry(app, [], out) is False

    [second] = await DeadLetters(app.db).waiting()
    assert second.run_id != first.run_id and second.path == first.path == "Inbox/buy oat milk.md"
    assert f"`vaultbot retry {second.run_id[:8]}`" in out.getvalue() and "not answered again" in out.getvalue()
    assert inbox_notes(app) == ["buy oat milk.md"]
    told = [m.text for m in await outbox(app) if "vaultbot retry" in m.text]
    assert len(told) == 2 and second.run_id[:8] in told[1]


@pytest.mark.parametrize(
    ("prefix", "error"),
    [("abc", "too short"), ("ffffffff", "no dead-lettered message")],
)
async def test_an_unknown_or_too_short_id_is_a_clear_error_and_sends_nothing(
    app: App, fake_anthropic: FakeAnthropic, prefix: str, error: str
) -> None:
    fake_anthropic.handler = lambda body: api.status(500)
    await send(app, "buy oat milk")
    await run_inbox(app)
    asked = len(fake_anthropic.requests)
    with pytest.raises(UnknownDeadLetter, match=error):
        await retry(app, [prefix], io.StringIO())
    assert len(fake_anthropic.requests) == asked and len(await DeadLetters(app.db).waiting()) == 1


async def test_a_capture_whose_write_fails_is_logged_as_a_failure_and_the_run_failed(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await make_app()  # no key: capture mode
    DiskFaults(monkeypatch, error=PermissionError(errno.EACCES, "Permission denied"))
    await send(app, "remember the oat milk")
    await run_inbox(app)
    [reply] = [m.text for m in await outbox(app)]
    assert reply.startswith("I could not save that")
    [entry] = await app.store.list_interactions()
    assert entry["category"] == "error" and "Captured" not in entry["summary"]
    assert "Permission denied" in entry["summary"]
    [run] = await app.store.list_runs()
    assert run["status"] == "failed" and "Permission denied" in run["reason"]


async def test_a_note_command_whose_write_fails_is_logged_as_a_failure_and_the_run_failed(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await make_app()
    DiskFaults(monkeypatch)
    await send(app, "/note buy oat milk")
    await run_inbox(app)
    [entry] = await app.store.list_interactions()
    assert entry["category"] == "error" and "No space left" in entry["summary"]
    [run] = await app.store.list_runs()
    assert run["status"] == "failed"


async def test_a_budget_capture_whose_write_fails_is_logged_as_a_failure(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"sdk_max_retries": 0},
        budget={"daily_usd": 0.000001},
    )
    fake_anthropic.enqueue(api.text("Hello."))
    await send(app, "hello")  # spends the day's budget
    await run_inbox(app)
    DiskFaults(monkeypatch)
    await send(app, "remember the oat milk")
    await run_inbox(app)
    assert len(fake_anthropic.requests) == 1
    [entry] = await app.store.list_interactions()
    assert entry["category"] == "error" and "Captured" not in entry["summary"]
    run = (await app.store.list_runs())[0]
    assert run["status"] == "failed" and run["mode"] == "capture"
