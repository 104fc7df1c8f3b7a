"""The servers misbehave under a running bot: the IMAP server restarts or lacks IDLE, the SMTP server
fails for a while. Nothing is lost, nothing is answered twice."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from types import SimpleNamespace

import pytest

from bot.channels.email.imap import ConnectionLost, ImapError, Mailbox
from bot.channels.email.receiver import EmailReceiver
from bot.settings import EmailSettings
from tests.channels.email.harness import Serve, email_settings, wait_for
from tests.channels.email.mails import mail
from tests.channels.telegram_harness import echo
from tests.fakes.dovecot import BOT, PASSWORD, Dovecot
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.smtp_server import RecordingSmtp


async def test_the_imap_server_restarted_under_a_running_bot(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp, caplog: pytest.LogCaptureFixture
) -> None:
    await serve(ScriptedModel(echo))
    await asyncio.to_thread(dovecot.deliver, mail("before"))
    await asyncio.to_thread(smtp.wait_count, 1)

    await asyncio.to_thread(dovecot.stop)
    await wait_for(lambda: "lost the IMAP connection" in caplog.text, "the bot saw the connection go")
    await wait_for(lambda: "cannot read INBOX" in caplog.text, "the bot failed to reconnect at least once")
    await asyncio.to_thread(dovecot.start)
    # Mail that came while the bot was reconnecting: it is unseen, and taken once the session is back.
    await asyncio.to_thread(dovecot.deliver, mail("during"))
    await asyncio.to_thread(dovecot.deliver, mail("after"))
    replies = await asyncio.to_thread(smtp.wait_count, 3)

    assert sorted(r.text.rsplit("\n", 1)[-1] for r in replies) == ["after", "before", "during"]
    await wait_for(lambda: dovecot.unseen() == [], "every mail was flagged seen")
    await asyncio.sleep(0.3)
    assert len(smtp.received) == 3
    assert "imap-secret" not in caplog.text


async def test_without_idle_the_mailbox_is_polled(serve: Serve, smtp: RecordingSmtp) -> None:
    with Dovecot(idle=False) as plain:
        served = await serve(ScriptedModel(echo), poll_interval=0.2, imap_port=plain.port)
        await asyncio.to_thread(plain.deliver, mail("polled"))
        [reply] = await asyncio.to_thread(smtp.wait_count, 1)
        assert reply.text.endswith("polled")
        await served.channel.stop()
        await served.task


async def test_a_reply_the_smtp_server_puts_off_is_sent_later_once(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    smtp.fail_next = 2
    served = await serve(ScriptedModel(echo))
    served.channel.outbox_worker.backoff = 0.05
    await asyncio.to_thread(dovecot.deliver, mail("try again"))
    [reply] = await asyncio.to_thread(smtp.wait_count, 1)
    assert reply.text.endswith("try again")
    await wait_for(lambda: smtp.fail_next == 0, "both failures were answered")
    await asyncio.sleep(0.3)
    assert len(smtp.received) == 1
    assert await served.app.bus.counts("outbound:email") == {"done": 1}


async def test_a_password_refused_after_serving_is_retried_and_never_shown(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp, caplog: pytest.LogCaptureFixture
) -> None:
    """Refused at the first start it stops the bot (test_email_setup); once the channel has served, a
    refusal (the server restarted with its accounts not yet loaded) may pass, and is tried again."""
    served = await serve(ScriptedModel(echo))
    await served.channel.ready.wait()
    await asyncio.to_thread(dovecot.stop)
    (dovecot.root / "passwd").write_text(f"{BOT}:{{PLAIN}}changed-password-Zz9\n")
    await asyncio.to_thread(dovecot.start)
    await wait_for(lambda: caplog.text.count("refused the login") >= 2, "two failed logins")
    assert "check VAULTBOT_EMAIL__USERNAME and VAULTBOT_EMAIL__PASSWORD" in caplog.text
    assert not served.task.done()
    assert PASSWORD not in caplog.text


async def relay(port: int, cut: list[bytes], client: asyncio.StreamReader, back: asyncio.StreamWriter) -> None:
    """Relay one connection to the IMAP server at ``port``; the first time the bot asks to IDLE, close
    the connection instead, before the server can agree (noted in ``cut``)."""
    server, to_server = await asyncio.open_connection("127.0.0.1", port)

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter, watch: bool) -> None:
        try:
            while data := await source.read(65536):
                if watch and not cut and data.rstrip().endswith(b" IDLE"):
                    cut.append(data)
                    return
                sink.write(data)
                await sink.drain()
        finally:
            back.close()
            to_server.close()

    await asyncio.gather(copy(client, to_server, True), copy(server, back, False), return_exceptions=True)


async def test_a_connection_closed_before_the_server_agrees_to_idle_is_reconnected_and_stops_when_told(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp, caplog: pytest.LogCaptureFixture
) -> None:
    """The IMAP connection closes just after the bot asked to IDLE (a server restarted then): the bot
    reconnects and answers mail, and stops when told (aioimaplib alone waits for the server's go-ahead
    forever, so the bot neither read mail nor stopped)."""
    cut: list[bytes] = []
    proxy = await asyncio.start_server(functools.partial(relay, dovecot.port, cut), "127.0.0.1", 0)
    async with proxy:
        served = await serve(ScriptedModel(echo), imap_port=proxy.sockets[0].getsockname()[1])
        await wait_for(lambda: bool(cut), "the first IDLE was cut")
        await asyncio.to_thread(dovecot.deliver, mail("after the cut"))
        [reply] = await asyncio.to_thread(smtp.wait_count, 1)
        assert reply.text.endswith("after the cut")
        assert "lost the IMAP connection" in caplog.text
        await served.channel.stop()
        await asyncio.wait_for(served.task, 30)


async def test_a_mail_stored_but_not_flagged_seen_is_taken_again_and_answered_once(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection drops between storing a mail on the bus and flagging it: the mail is fetched
    again after the reconnect, and the bus and the record of mails taken keep it from a second turn."""
    flagging = Mailbox.mark_seen
    failed: list[int] = []

    async def drop_once(self: Mailbox, uid: int) -> None:
        if not failed:
            failed.append(uid)
            raise ConnectionLost("the IMAP server closed the connection")
        await flagging(self, uid)

    monkeypatch.setattr(Mailbox, "mark_seen", drop_once)
    model = ScriptedModel(echo)
    served = await serve(model)
    uid = await asyncio.to_thread(dovecot.deliver, mail("only once"))
    await wait_for(lambda: dovecot.flags()[uid] == {"\\Seen"}, "the mail was flagged on the second try")
    await asyncio.to_thread(smtp.wait_count, 1)
    await asyncio.sleep(0.3)
    assert failed == [uid]
    assert len(smtp.received) == 1 and len(model.calls) == 1
    assert await served.app.bus.counts("inbound") == {"done": 1}


def nested(depth: int) -> bytes:
    """Ann's mail forwarding a message that forwards one that forwards one… ``depth`` deep."""
    inner = b"From: bob@example.net\nSubject: x\n\nhi\n"
    for _ in range(depth):
        inner = b"From: bob@example.net\nContent-Type: message/rfc822\n\n" + inner
    outer = mail("poison", subject="Fwd: nest").split(b"\n\n", 1)[0]
    outer = outer.replace(b'Content-Type: text/plain; charset="utf-8"', b"Content-Type: message/rfc822")
    return outer + b"\n\n" + inner


async def test_a_mail_that_cannot_be_read_is_logged_not_lost_in_silence(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    served = await serve(ScriptedModel(echo))
    uid = await asyncio.to_thread(dovecot.deliver, nested(3000))  # past what the email package can parse
    await asyncio.to_thread(dovecot.deliver, mail("fine"))
    replies = await asyncio.to_thread(smtp.wait_count, 2)
    [told] = [r for r in replies if "did not reach me" in r.text]
    assert "I could not read it: it nests parts too deep" in told.text
    assert any(r.text.endswith("fine") for r in replies)
    assert dovecot.flags()[uid] == {"\\Seen"}
    [entry] = [e for e in await served.app.store.list_interactions() if e["category"] == "error"]
    assert f"could not be read (it nests parts too deep); it is left in INBOX (UID {uid})" in entry["summary"]


async def test_an_unreadable_mail_whose_log_entry_cannot_be_stored_stays_unseen_and_is_logged_later(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store is locked while an unreadable mail is logged: the channel goes on (it does not stop on
    the error), the mail stays unseen until its entry is stored, and it is logged once."""
    telling = EmailReceiver._tell_sender
    locked: list[str] = []

    async def locked_once(self: EmailReceiver, *args: object) -> None:
        if not locked:
            locked.append("once")
            raise sqlite3.OperationalError("database is locked")
        await telling(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(EmailReceiver, "_tell_sender", locked_once)
    served = await serve(ScriptedModel(echo))
    uid = await asyncio.to_thread(dovecot.deliver, nested(3000))
    await wait_for(lambda: dovecot.flags()[uid] == {"\\Seen"}, "the mail was flagged once its entry was stored")
    assert len(locked) == 1 and not served.task.done()
    errors = [e for e in await served.app.store.list_interactions() if e["category"] == "error"]
    assert len(errors) == 1 and "could not be read (it nests parts too deep)" in errors[0]["summary"]


async def test_a_server_that_closes_before_greeting_fails_the_connection_at_once(smtp: RecordingSmtp) -> None:
    """As a restarting server does: the bot tries again after its backoff rather than waiting out a timeout."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    hanging_up = SimpleNamespace(port=port)  # where email_settings looks for the IMAP server
    settings = EmailSettings(**email_settings(hanging_up, smtp))  # type: ignore[arg-type]
    try:
        with pytest.raises(ImapError, match="closed the connection"):
            await asyncio.wait_for(Mailbox.open(settings), 5)
    finally:
        server.close()
        await server.wait_closed()
