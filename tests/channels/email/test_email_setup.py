"""A mail set-up that cannot work, against the real Dovecot and aiosmtpd: a refused password, TLS where the
port speaks none and none where it expects TLS, nothing listening. `vaultbot run` stops at once with one
line naming the setting to change (as on a Telegram token refused) and exits 2; `vaultbot doctor` says
the same lines, for IMAP and SMTP. The password shows nowhere."""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from bot.channels.email import EmailRefused
from tests.channels.email.harness import Serve, email_env
from tests.fakes.dovecot import PASSWORD, Dovecot, free_port
from tests.fakes.smtp_server import RecordingSmtp
from tests.helpers import subprocess_env
from tests.test_doctor_cli import doctor

WRONG = "not-the-password-Qq4"
CREDENTIALS = "check VAULTBOT_EMAIL__USERNAME and VAULTBOT_EMAIL__PASSWORD"


@pytest.fixture
def ca(tmp_path: Path) -> tuple[trustme.CA, Path]:
    """A test CA and its certificate's file, for SSL_CERT_FILE: the bot's processes trust it."""
    authority = trustme.CA()
    path = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    return authority, path


@pytest.fixture
def tls_servers(ca: tuple[trustme.CA, Path]) -> Iterator[tuple[Dovecot, RecordingSmtp]]:
    """A Dovecot with a TLS port beside its plain one, and an SMTP server speaking TLS from the start."""
    certificate = ca[0].issue_cert("127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(context)
    with Dovecot(tls=certificate) as dovecot, RecordingSmtp(tls=context) as smtp:
        yield dovecot, smtp


def broken(case: str, dovecot: Dovecot, smtp: RecordingSmtp) -> dict[str, str]:
    """The environment of a set-up broken as ``case`` says, for both servers where it applies."""
    env = email_env(dovecot, smtp)
    if case == "wrong password":
        return {**env, "VAULTBOT_EMAIL__PASSWORD": WRONG}
    if case == "ssl against a plain port":
        return {**env, "VAULTBOT_EMAIL__IMAP_SECURITY": "ssl", "VAULTBOT_EMAIL__SMTP_SECURITY": "ssl"}
    if case == "no TLS against a TLS port":
        return {**env, "VAULTBOT_EMAIL__IMAP_PORT": str(dovecot.tls_port)}  # the SMTP server speaks TLS only
    if case == "smtp: ssl against a plain port":
        return {**env, "VAULTBOT_EMAIL__SMTP_SECURITY": "ssl"}
    if case == "smtp: nothing listening":
        return {**env, "VAULTBOT_EMAIL__SMTP_PORT": str(free_port())}
    assert case == "nothing listening"
    return {**env, "VAULTBOT_EMAIL__IMAP_PORT": str(free_port()), "VAULTBOT_EMAIL__SMTP_PORT": str(free_port())}


# What the one line names, for IMAP and SMTP.
SAYS = {
    "wrong password": (
        f"refused the login of bot@example.org ([AUTHENTICATIONFAILED] Authentication failed.): {CREDENTIALS}",
        f"refused the login of bot@example.org (535 5.7.8 Authentication credentials invalid): {CREDENTIALS}",
    ),
    "ssl against a plain port": (
        "does not speak TLS from the start",
        "does not speak TLS from the start",
    ),
    "no TLS against a TLS port": (
        "said nothing once connected: a port that expects TLS from the start (993) needs "
        "VAULTBOT_EMAIL__IMAP_SECURITY=ssl",
        "said nothing once connected: a port that expects TLS from the start (465) needs "
        "VAULTBOT_EMAIL__SMTP_SECURITY=ssl",
    ),
    "nothing listening": (
        "(connection refused): check VAULTBOT_EMAIL__IMAP_HOST and VAULTBOT_EMAIL__IMAP_PORT",
        "(connection refused): check VAULTBOT_EMAIL__SMTP_HOST and VAULTBOT_EMAIL__SMTP_PORT",
    ),
}
CASES = list(SAYS)


def run(tmp_path: Path, env: dict[str, str], ca: Path) -> subprocess.CompletedProcess[str]:
    """`vaultbot run` to its end (it must end by itself: a set-up that cannot work is not retried)."""
    return subprocess.run(
        [sys.executable, "-m", "bot", "run"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(**env, SSL_CERT_FILE=str(ca)),
        timeout=50,
    )


# The IMAP server working, the SMTP server not: the run stops on it too, before it says it serves.
SMTP_ONLY = {
    "smtp: ssl against a plain port": "does not speak TLS from the start",
    "smtp: nothing listening": "check VAULTBOT_EMAIL__SMTP_HOST and VAULTBOT_EMAIL__SMTP_PORT",
}


@pytest.mark.parametrize("case", CASES + list(SMTP_ONLY))
def test_run_stops_on_a_broken_set_up_with_one_line_naming_the_setting(
    tmp_path: Path, case: str, tls_servers: tuple[Dovecot, RecordingSmtp], ca: tuple[trustme.CA, Path]
) -> None:
    dovecot, smtp = tls_servers
    with RecordingSmtp() as plain:
        done = run(tmp_path, broken(case, dovecot, smtp if case == "no TLS against a TLS port" else plain), ca[1])
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    [line] = done.stderr.splitlines()
    says = SMTP_ONLY[case] if case in SMTP_ONLY else SAYS[case][0]
    assert line.startswith("vaultbot: ") and says in line and "VAULTBOT_EMAIL__" in line
    assert "Traceback" not in done.stderr
    log = tmp_path / "data" / "vaultbot.log"
    logged = log.read_text(encoding="utf-8") if log.exists() else ""
    assert WRONG not in done.stderr + logged and PASSWORD not in done.stderr + logged
    assert dovecot.unseen() == []  # nothing was taken, nothing flagged


@pytest.mark.parametrize("case", CASES)
def test_doctor_says_the_same_lines_for_imap_and_smtp(
    tmp_path: Path, case: str, tls_servers: tuple[Dovecot, RecordingSmtp], ca: tuple[trustme.CA, Path]
) -> None:
    dovecot, smtp = tls_servers
    with RecordingSmtp() as plain:
        env = broken(case, dovecot, smtp if case == "no TLS against a TLS port" else plain)
        done = doctor(tmp_path, **env, SSL_CERT_FILE=str(ca[1]))
    assert done.returncode == 1
    [imap] = [line for line in done.stdout.splitlines() if "email imap:" in line]
    [sent] = [line for line in done.stdout.splitlines() if "email smtp:" in line]
    assert imap.startswith("FAIL") and SAYS[case][0] in imap and "VAULTBOT_EMAIL__" in imap
    assert sent.startswith("FAIL") and SAYS[case][1] in sent and "VAULTBOT_EMAIL__" in sent
    assert "SSLError" not in sent.split("(", 1)[0] and "SMTPConnectError" not in sent
    assert WRONG not in done.stdout + done.stderr


async def test_a_login_refused_at_the_first_start_stops_the_channel(serve: Serve) -> None:
    served = await serve(password=WRONG)
    with pytest.raises(ExceptionGroup) as group:
        await served.task
    [refused] = group.value.exceptions
    assert isinstance(refused, EmailRefused) and CREDENTIALS in str(refused) and WRONG not in str(refused)
    assert not served.channel.ready.is_set()
