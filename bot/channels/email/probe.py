"""What ``vaultbot doctor`` asks the mail servers: the IMAP login, the folder and IDLE, and the SMTP
server's greeting, TLS and login. Nothing is sent and nothing is flagged: the probe only looks.

A set-up that cannot work is said in the line ``vaultbot run`` stops with (:mod:`.setup`), naming the
setting to change. The password never appears in what it says: the servers' own words about a refused
login do not hold it, and errors are described by their type and those words.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiosmtplib

from bot.backoff import describe
from bot.channels.email.imap import ImapError, Mailbox
from bot.channels.email.sender import smtp_client
from bot.channels.email.setup import imap_refusal, smtp_refusal
from bot.settings import EmailSettings


@dataclass(frozen=True)
class Probe:
    """One finding: what was asked, whether it works, and what was seen."""

    name: str
    ok: bool
    detail: str


async def probe(settings: EmailSettings, *, timeout: float) -> list[Probe]:
    """Ask the IMAP and SMTP servers, each within ``timeout`` seconds."""
    return [await _imap(settings, timeout), await _smtp(settings, timeout)]


async def _imap(settings: EmailSettings, timeout: float) -> Probe:
    where = f"{settings.imap_host}:{settings.imap_port} ({settings.imap_security})"
    try:
        mailbox = await asyncio.wait_for(Mailbox.open(settings, timeout=timeout), timeout)
    except (ImapError, OSError, TimeoutError) as exc:
        return Probe("email imap", False, imap_refusal(exc, settings) or f"{where}: {_reason(exc)}")
    try:
        unseen = len(await asyncio.wait_for(mailbox.unseen(), timeout))
        idles = mailbox.idles
    except (ImapError, OSError, TimeoutError) as exc:
        return Probe("email imap", False, f"{where}: logged in, but reading {settings.mailbox} failed: {_reason(exc)}")
    finally:
        await mailbox.close()
    how = "IDLE supported: new mail arrives at once" if idles else "no IDLE: the mailbox is polled every minute"
    detail = f"{where}: logged in as {settings.username}; {settings.mailbox} has {unseen} unseen mail(s); {how}"
    return Probe("email imap", True, detail)


async def _smtp(settings: EmailSettings, timeout: float) -> Probe:
    assert settings.password is not None
    where = f"{settings.smtp_host}:{settings.smtp_port} ({settings.smtp_security})"
    client = smtp_client(settings, timeout)
    try:
        await client.connect()
        await client.login(settings.username or "", settings.password.get_secret_value())
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
        return Probe("email smtp", False, smtp_refusal(exc, settings) or f"{where}: {_reason(exc)}")
    finally:
        if client.is_connected:
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError, TimeoutError):
                client.close()
    return Probe("email smtp", True, f"{where}: reachable, login of {settings.username} accepted (nothing sent)")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        return f"the server answered {exc.code} {exc.message[:200]}"
    if isinstance(exc, ImapError):
        return str(exc)
    return describe(exc)
