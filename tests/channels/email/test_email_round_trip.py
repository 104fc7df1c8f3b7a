"""A mail in, a reply out: a real Dovecot and a real aiosmtpd on 127.0.0.1, the real channel, runner
and store, a scripted model."""

from __future__ import annotations

import asyncio

from bot.bus import Event, OutboundMessage, events_topic, outbound_topic
from tests.channels.email.harness import Serve, wait_for
from tests.channels.email.mails import ANN, mail
from tests.channels.telegram_harness import echo
from tests.fakes.dovecot import BOT, Dovecot
from tests.fakes.scripted_model import ScriptedModel, say
from tests.fakes.smtp_server import RecordingSmtp


async def test_a_mail_is_answered_once_in_its_own_thread(serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp) -> None:
    served = await serve(ScriptedModel(echo))
    raw = mail("Buy oat milk", subject="Shopping", message_id="<first@example.com>", references="<root@example.com>")
    uid = await asyncio.to_thread(dovecot.deliver, raw)

    [reply] = await asyncio.to_thread(smtp.wait_count, 1)
    message = reply.message
    assert reply.sender == BOT and reply.recipients == [ANN]
    assert message["To"] == ANN and message["From"] == BOT
    assert message["Subject"] == "Re: Shopping"
    assert message["In-Reply-To"] == "<first@example.com>"
    assert message["References"] == "<root@example.com> <first@example.com>"
    assert message["Auto-Submitted"] == "auto-replied"
    assert message["Message-ID"].endswith("@example.org>")
    assert reply.text == "You said: Subject: Shopping\nBuy oat milk"
    assert smtp.logins == [BOT]
    await wait_for(lambda: dovecot.flags()[uid] == {"\\Seen"}, "the mail was flagged seen")
    assert await served.app.bus.counts("inbound") == {"done": 1}


async def test_the_reply_reads_as_markdown_in_plain_text_and_renders_in_html(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    answer = "## Your list\n\n- **oat milk**\n- eggs\n\n<script>alert(1)</script>"
    await serve(ScriptedModel(lambda messages: say(answer)))
    await asyncio.to_thread(dovecot.deliver, mail("What is on my list?"))

    [reply] = await asyncio.to_thread(smtp.wait_count, 1)
    assert reply.text == answer
    html = reply.message.get_body(preferencelist=("html",))
    assert html is not None
    content = html.get_content()
    assert "<h2>Your list</h2>" in content and "<strong>oat milk</strong>" in content
    assert "<script>" not in content and "&lt;script&gt;" in content


async def test_a_long_answer_is_one_mail(serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp) -> None:
    answer = "\n\n".join(f"Paragraph {n}: " + "words " * 200 for n in range(20))  # ~24,000 characters
    await serve(ScriptedModel(lambda messages: say(answer)))
    await asyncio.to_thread(dovecot.deliver, mail("Tell me everything"))

    [reply] = await asyncio.to_thread(smtp.wait_count, 1)
    assert reply.text == answer.strip()
    await asyncio.sleep(0)
    assert len(smtp.received) == 1


async def test_each_sender_is_one_conversation_with_its_history(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    model = ScriptedModel(echo)
    await serve(model, allowed_senders=[ANN, "bob@example.net"])
    await asyncio.to_thread(dovecot.deliver, mail("first", subject="One"))
    await asyncio.to_thread(smtp.wait_count, 1)
    bob = mail(
        "from bob",
        sender="Bob <bob@example.net>",
        results=["mx.example.org; dkim=pass header.d=example.net; spf=pass smtp.mailfrom=bob@example.net"],
    )
    await asyncio.to_thread(dovecot.deliver, bob)
    await asyncio.to_thread(smtp.wait_count, 2)
    await asyncio.to_thread(dovecot.deliver, mail("second", subject="Re: One"))
    replies = await asyncio.to_thread(smtp.wait_count, 3)

    assert [r.recipients for r in replies] == [[ANN], ["bob@example.net"], [ANN]]
    history = [m["content"] for m in model.calls[2] if m["role"] == "user"]
    assert len(history) == 2 and "first" in str(history[0]) and "second" in str(history[1])
    assert len([m for m in model.calls[1] if m["role"] == "user"]) == 1  # Bob's conversation is his own


async def test_a_command_in_the_subject_or_first_line_is_a_command(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    model = ScriptedModel()  # a command never reaches it: it would fail the turn
    served = await serve(model)
    await asyncio.to_thread(served.app.notes.write, "Groceries", "Oat milk list", "oat milk and bread")
    await asyncio.to_thread(dovecot.deliver, mail("", subject="/find oat"))
    await asyncio.to_thread(dovecot.deliver, mail("/find bread\n\nthanks", subject="Re: something"))

    first, second = await asyncio.to_thread(smtp.wait_count, 2)
    assert "Oat milk list" in first.text and "Oat milk list" in second.text
    assert model.calls == []


async def test_notices_and_reminders_join_the_conversations_latest_thread(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    served = await serve(ScriptedModel(echo))
    await asyncio.to_thread(dovecot.deliver, mail("hi", subject="Plans", message_id="<plans@example.com>"))
    await asyncio.to_thread(smtp.wait_count, 1)
    bus, conversation = served.app.bus, f"email:{ANN}"
    event = Event(
        type="failure.detected", conversation=conversation, recipient=ANN, notice="⚠ vault_write keeps failing"
    )
    await bus.publish(events_topic("email"), event, conversation=conversation, dedupe_key="event-1")
    reminder = OutboundMessage(
        channel="email", conversation=conversation, recipient=ANN, text="⏰ call the plumber", in_reply_to="reminder:1"
    )
    await bus.publish(outbound_topic("email"), reminder, conversation=conversation, dedupe_key="reminder:1")

    replies = await asyncio.to_thread(smtp.wait_count, 3)
    later = {r.text: r.message for r in replies[1:]}
    assert set(later) == {"⚠ vault_write keeps failing", "⏰ call the plumber"}
    for message in later.values():
        assert message["Subject"] == "Re: Plans" and message["In-Reply-To"] == "<plans@example.com>"
        assert message["Auto-Submitted"] == "auto-replied"
    assert len({r.message["Message-ID"] for r in replies}) == 3
