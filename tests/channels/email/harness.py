"""Helpers for the e-mail tests: the settings that reach a test's own servers, and what a served
channel is."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot.app import App
from bot.channels.email import EmailChannel
from tests.channels.email.mails import ANN, TRUSTED
from tests.fakes import dovecot as imap
from tests.fakes.dovecot import Dovecot
from tests.fakes.smtp_server import RecordingSmtp


def email_settings(dovecot: Dovecot, smtp: RecordingSmtp, **overrides: Any) -> dict[str, Any]:
    """The e-mail section that reaches these servers, Ann allowlisted, ``overrides`` on top."""
    return {
        "imap_host": "127.0.0.1",
        "imap_port": dovecot.port,
        "imap_security": "none",
        "smtp_host": "127.0.0.1",
        "smtp_port": smtp.port,
        "smtp_security": "none",
        "username": imap.BOT,
        "password": imap.PASSWORD,
        "address": imap.BOT,
        "allowed_senders": [ANN],
        "trusted_authserv_id": TRUSTED,
        **overrides,
    }


def email_env(dovecot: Dovecot, smtp: RecordingSmtp) -> dict[str, str]:
    """The same as environment variables, for `vaultbot run`."""
    return {
        "VAULTBOT_EMAIL__IMAP_HOST": "127.0.0.1",
        "VAULTBOT_EMAIL__IMAP_PORT": str(dovecot.port),
        "VAULTBOT_EMAIL__IMAP_SECURITY": "none",
        "VAULTBOT_EMAIL__SMTP_HOST": "127.0.0.1",
        "VAULTBOT_EMAIL__SMTP_PORT": str(smtp.port),
        "VAULTBOT_EMAIL__SMTP_SECURITY": "none",
        "VAULTBOT_EMAIL__USERNAME": imap.BOT,
        "VAULTBOT_EMAIL__PASSWORD": imap.PASSWORD,
        "VAULTBOT_EMAIL__ADDRESS": imap.BOT,
        "VAULTBOT_EMAIL__ALLOWED_SENDERS": f'["{ANN}"]',
        "VAULTBOT_EMAIL__TRUSTED_AUTHSERV_ID": TRUSTED,
    }


@dataclass
class Served:
    """The channel running in-process on ``app``; ``task`` is its run()."""

    app: App
    channel: EmailChannel
    task: asyncio.Task[None]


Serve = Callable[..., Awaitable[Served]]


async def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Wait until ``condition()`` (which may block briefly: it runs in a thread) holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await asyncio.to_thread(condition):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.02)
