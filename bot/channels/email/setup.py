"""A mail set-up that cannot work, said in one line naming the setting to change: a refused login, TLS
where the port speaks none (or none where it expects TLS), nothing listening at the address.

``vaultbot run`` stops on these at its first start, as on a Telegram token refused, and ``vaultbot
doctor`` says the same lines. Everything else (a timeout, a server that went away) may pass, and is
tried again. The password is never in a line: the servers' words about a refused login do not hold it.
"""

from __future__ import annotations

import ssl

import aiosmtplib

from bot.backoff import describe
from bot.channels.email.imap import LoginRefused, NoGreeting
from bot.settings import EmailSettings
from bot.startup import StartupError

__all__ = ["EmailRefused", "imap_refusal", "smtp_refusal"]

CREDENTIALS = "check VAULTBOT_EMAIL__USERNAME and VAULTBOT_EMAIL__PASSWORD"


class EmailRefused(StartupError):
    """The mail servers cannot be used with these settings: trying again cannot help. The message is
    one line naming the setting to fix, never the password; ``vaultbot run`` prints it and exits 2."""


def imap_refusal(error: BaseException, settings: EmailSettings) -> str | None:
    """The line saying which setting makes the IMAP server unusable, or None when ``error`` may pass."""
    where = f"{settings.imap_host}:{settings.imap_port}"
    if isinstance(error, LoginRefused):
        return f"the IMAP server at {where} refused the login of {settings.username} ({error.said}): {CREDENTIALS}"
    return _transport(error, where, settings.imap_security, "IMAP", 993, isinstance(error, NoGreeting))


def smtp_refusal(error: BaseException, settings: EmailSettings) -> str | None:
    """The line saying which setting makes the SMTP server unusable, or None when ``error`` may pass."""
    where = f"{settings.smtp_host}:{settings.smtp_port}"
    if isinstance(error, aiosmtplib.SMTPAuthenticationError):
        said = f"{error.code} {error.message[:200]}"
        return f"the SMTP server at {where} refused the login of {settings.username} ({said}): {CREDENTIALS}"
    if isinstance(error, aiosmtplib.SMTPException) and "STARTTLS extension not supported" in str(error):
        return (
            f"the SMTP server at {where} does not offer STARTTLS: set VAULTBOT_EMAIL__SMTP_SECURITY to ssl "
            "for a port that expects TLS from the start (465), or none"
        )
    silent = isinstance(error, aiosmtplib.SMTPConnectTimeoutError) and "server ready" in str(error)
    cause = error.__cause__ if isinstance(error, aiosmtplib.SMTPConnectError) else error
    return _transport(cause or error, where, settings.smtp_security, "SMTP", 465, silent)


def _transport(
    error: BaseException, where: str, security: str, protocol: str, tls_port: int, silent: bool
) -> str | None:
    """The line for the connection itself: nothing listening, TLS against a plain port, or a port that
    waits for TLS greeted without it (``silent``: connected, and the server said nothing)."""
    setting = f"VAULTBOT_EMAIL__{protocol}_SECURITY"
    address = f"VAULTBOT_EMAIL__{protocol}_HOST and VAULTBOT_EMAIL__{protocol}_PORT"
    if isinstance(error, ConnectionRefusedError):
        return f"nothing listens for {protocol} at {where} (connection refused): check {address}"
    if isinstance(error, ssl.SSLError) and not isinstance(error, ssl.SSLCertVerificationError) and security == "ssl":
        return (
            f"{where} does not speak TLS from the start ({describe(error)}): set {setting} to starttls or none "
            f"for this port, or VAULTBOT_EMAIL__{protocol}_PORT to the server's TLS port ({tls_port})"
        )
    if silent and security != "ssl":
        return (
            f"the {protocol} server at {where} said nothing once connected: a port that expects TLS from the "
            f"start ({tls_port}) needs {setting}=ssl; otherwise check {address}"
        )
    return None
