"""`vaultbot doctor` on the e-mail channel: the IMAP login, the folder and IDLE, the SMTP server's login;
it sends nothing, flags nothing, and never shows the password."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot.channels.email import probe
from bot.cli.doctor import diagnose
from bot.settings import EmailSettings, load_settings
from tests.channels.email.harness import email_env, email_settings
from tests.channels.email.mails import mail
from tests.fakes.dovecot import PASSWORD, Dovecot, free_port
from tests.fakes.smtp_server import RecordingSmtp
from tests.test_doctor_cli import doctor


def lines(done: subprocess.CompletedProcess[str], prefix: str) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.split(None, 1)[-1].startswith(prefix)]


def test_doctor_reports_both_servers_working_and_changes_nothing(
    tmp_path: Path, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    uid = dovecot.deliver(mail("unread"))
    done = doctor(tmp_path, **email_env(dovecot, smtp))
    assert done.returncode == 0, done.stdout + done.stderr
    [email] = lines(done, "email:")
    [imap] = lines(done, "email imap:")
    [smtp_line] = lines(done, "email smtp:")
    assert email.startswith("ok ") and "answering ann@example.com" in email and "mx.example.org" in email
    assert imap.startswith("ok ") and "INBOX has 1 unseen" in imap and "IDLE supported" in imap
    assert smtp_line.startswith("ok ") and "login of bot@example.org accepted (nothing sent)" in smtp_line
    assert smtp.received == [] and dovecot.unseen() == [uid]
    assert PASSWORD not in done.stdout + done.stderr


def test_doctor_says_what_fails_without_the_password(tmp_path: Path, dovecot: Dovecot, smtp: RecordingSmtp) -> None:
    wrong = "not-the-password-Yy7"
    done = doctor(
        tmp_path,
        **{
            **email_env(dovecot, smtp),
            "VAULTBOT_EMAIL__PASSWORD": wrong,
            "VAULTBOT_EMAIL__SMTP_PORT": str(free_port()),
        },
    )
    assert done.returncode == 1
    [imap] = lines(done, "email imap:")
    [smtp_line] = lines(done, "email smtp:")
    assert imap.startswith("FAIL") and "refused the login of bot@example.org" in imap
    assert smtp_line.startswith("FAIL") and "nothing listens for SMTP at 127.0.0.1:" in smtp_line
    assert wrong not in done.stdout + done.stderr


async def test_the_probe_tells_a_server_without_idle(smtp: RecordingSmtp) -> None:
    with Dovecot(idle=False) as plain:
        settings = EmailSettings(**email_settings(plain, smtp))
        imap, sent = await probe(settings, timeout=10)
    assert imap.ok and "no IDLE: the mailbox is polled" in imap.detail
    assert sent.ok


async def test_doctor_without_the_channel_says_how_to_turn_it_on(tmp_path: Path) -> None:
    checks = await diagnose(load_settings())
    [email] = [check for check in checks if check.name.startswith("email")]
    assert email.ok and email.detail == "not configured (set VAULTBOT_EMAIL__IMAP_HOST to enable)"
