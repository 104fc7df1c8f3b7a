"""Mail over TLS, as providers serve it: implicit TLS (`ssl`, ports 993 and 465) and STARTTLS, against a
Dovecot and an aiosmtpd with a certificate of a test CA; a certificate nobody vouches for is refused."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import trustme

from bot.app import App
from bot.backoff import Backoff
from bot.channels import Pacer
from bot.channels.email import EmailChannel, probe
from bot.settings import EmailSettings
from tests.channels.email.harness import email_settings
from tests.channels.email.mails import ANN, mail
from tests.channels.telegram_harness import echo
from tests.fakes.dovecot import Dovecot
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.smtp_server import RecordingSmtp


@pytest.fixture
def ca(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> trustme.CA:
    """A CA this process trusts (as a machine trusts the public ones), through OpenSSL's SSL_CERT_FILE."""
    authority = trustme.CA()
    path = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    monkeypatch.setenv("SSL_CERT_FILE", str(path))
    return authority


@pytest.fixture
def servers(request: pytest.FixtureRequest, ca: trustme.CA) -> Iterator[tuple[Dovecot, RecordingSmtp]]:
    security = request.param
    certificate = ca.issue_cert("127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(context)
    with (
        Dovecot(tls=certificate) as dovecot,
        RecordingSmtp(tls=context, starttls=security == "starttls") as smtp,
    ):
        yield dovecot, smtp


def tls_settings(dovecot: Dovecot, smtp: RecordingSmtp, security: str) -> dict[str, object]:
    return email_settings(
        dovecot,
        smtp,
        imap_port=dovecot.tls_port if security == "ssl" else dovecot.port,
        imap_security=security,
        smtp_security=security,
    )


@pytest.mark.parametrize("servers", ["ssl", "starttls"], indirect=True)
async def test_a_round_trip_over_tls(
    servers: tuple[Dovecot, RecordingSmtp], make_app: Callable[..., Awaitable[App]], request: pytest.FixtureRequest
) -> None:
    dovecot, smtp = servers
    security = request.node.callspec.params["servers"]
    app = await make_app(ScriptedModel(echo), email=tls_settings(dovecot, smtp, security))
    channel = EmailChannel(
        app.settings.email, db=app.db, bus=app.bus, store=app.store, notes=app.notes, pace=Pacer(most=100)
    )
    worker = app.runner_worker()
    tasks = [asyncio.create_task(channel.run()), asyncio.create_task(worker.run())]
    try:
        await asyncio.to_thread(dovecot.deliver, mail("over TLS"))
        [reply] = await asyncio.to_thread(smtp.wait_count, 1)
        assert reply.recipients == [ANN] and reply.text.endswith("over TLS")
        found = await probe(app.settings.email, timeout=10)
        assert all(f.ok for f in found), found
        assert f"({security})" in found[0].detail and f"({security})" in found[1].detail
        # The bot's own logins went over TLS (the test's deliveries log in without it).
        logins = [line for line in dovecot.log().splitlines() if "Login: user=<bot@example.org>" in line]
        assert any(", TLS," in line for line in logins), logins
    finally:
        await channel.stop()
        await worker.stop(5)
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.parametrize("servers", ["ssl"], indirect=True)
async def test_a_certificate_nobody_vouches_for_is_refused(
    servers: tuple[Dovecot, RecordingSmtp],
    make_app: Callable[..., Awaitable[App]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    dovecot, smtp = servers
    stranger = tmp_path / "another-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(stranger))
    monkeypatch.setenv("SSL_CERT_FILE", str(stranger))
    settings = EmailSettings(**tls_settings(dovecot, smtp, "ssl"))  # type: ignore[arg-type]
    imap, sent = await probe(settings, timeout=10)
    assert not imap.ok and "CERTIFICATE_VERIFY_FAILED" in imap.detail
    assert not sent.ok and "CERTIFICATE_VERIFY_FAILED" in sent.detail

    app = await make_app(ScriptedModel(echo), email=tls_settings(dovecot, smtp, "ssl"))
    channel = EmailChannel(
        app.settings.email, db=app.db, bus=app.bus, store=app.store, notes=app.notes, reconnect=Backoff(0.05, 0.1)
    )
    running = asyncio.create_task(channel.run())
    await asyncio.to_thread(dovecot.deliver, mail("must wait"))
    try:
        async with asyncio.timeout(30):
            while "CERTIFICATE_VERIFY_FAILED" not in caplog.text:
                await asyncio.sleep(0.05)
    finally:
        await channel.stop()
        await running
    assert dovecot.unseen() != [] and smtp.received == []
