"""The e-mail tests' servers do what the tests count on: Dovecot keeps mail and flags across a restart
and offers IDLE only when asked; aiosmtpd asks for the login, records what it accepts, fails on demand."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

import pytest

from tests.fakes.dovecot import BOT, PASSWORD, Dovecot
from tests.fakes.smtp_server import RecordingSmtp


def test_dovecot_keeps_mail_and_flags_across_a_restart() -> None:
    with Dovecot() as dovecot:
        first = dovecot.deliver(b"From: a@example.com\r\nSubject: one\r\n\r\nbody\r\n")
        second = dovecot.deliver(b"From: a@example.com\r\nSubject: two\r\n\r\nbody\r\n")
        with dovecot.session() as client:
            client.select("INBOX")
            client.uid("STORE", str(first), "+FLAGS", r"(\Seen)")
            assert "IDLE" in client.capabilities
        dovecot.restart()
        assert dovecot.unseen() == [second]
        assert dovecot.flags()[first] == {"\\Seen"}


def test_dovecot_without_idle_does_not_offer_it() -> None:
    with Dovecot(idle=False) as dovecot, dovecot.session() as client:
        assert "IDLE" not in client.capabilities


def test_the_smtp_server_asks_for_the_login_and_records_what_it_accepts() -> None:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = BOT, "ann@example.com", "hi"
    message.set_content("line one\nline two")
    with RecordingSmtp() as smtp:
        with smtplib.SMTP("127.0.0.1", smtp.port, timeout=10) as client:
            with pytest.raises(smtplib.SMTPAuthenticationError):
                client.login(BOT, "wrong")
            client.login(BOT, PASSWORD)
            smtp.fail_next = 1
            with pytest.raises(smtplib.SMTPDataError):
                client.send_message(message)
            client.send_message(message)
        [received] = smtp.wait_count(1)
    assert received.recipients == ["ann@example.com"] and received.text == "line one\nline two"
    assert smtp.logins == [BOT]
