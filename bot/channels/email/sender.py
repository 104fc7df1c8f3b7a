"""Sending: the outbox and run events to SMTP, threaded, paced, sent once.

Idempotent across retries: a mail the SMTP server accepted is recorded on the bus (``bus_progress``)
before the message is acked, so a retry does not send it again. Only a crash in the instant between the
server's acceptance and that record sends it twice, and then with the same ``Message-ID`` (fixed per
outbox message, so per inbound message and sequence), which mail clients show once.

Replies to one address are paced (:class:`bot.channels.pacing.Pacer`): at most 30 a minute. More wait in
the outbox, none is dropped, and a loop that slipped past every other guard costs little.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.message import EmailMessage

import aiosmtplib

from bot.bus import Bus, Delivery, Fatal, OutboundMessage
from bot.channels.email.compose import reply_mail
from bot.channels.email.ledger import Ledger
from bot.channels.notices import event_notice
from bot.channels.outbox import log_undeliverable
from bot.channels.pacing import Pacer
from bot.settings import EmailSettings
from bot.store import Store

log = logging.getLogger(__name__)

# Under a question for consent: mail has no buttons, so the person answers in words, in the thread.
HOW_TO_ANSWER = (
    "To answer, reply to this mail with allow (or yes) as its first word to let it happen once, or deny "
    "(or no) to refuse. A new message of yours instead declines it."
)
SMTP_TIMEOUT = 30.0
# Seconds a connection to the SMTP server is kept without a mail to send (servers close idle ones after a
# minute or more).
REUSE_SECONDS = 30.0


class Smtp:
    """Hands mail to the configured SMTP server over one connection, kept while mail keeps coming (a login
    per mail would cost a handful of round trips each, and providers limit logins); one that has been idle
    for :data:`REUSE_SECONDS`, or failed, is replaced by a new one."""

    def __init__(self, settings: EmailSettings, *, clock: Callable[[], float] = time.monotonic) -> None:
        assert settings.smtp_host is not None and settings.password is not None
        self._settings = settings
        self._clock = clock
        self._client: aiosmtplib.SMTP | None = None
        self._used = 0.0
        self._lock = asyncio.Lock()

    async def send(self, mail: EmailMessage, recipient: str) -> None:
        """Send ``mail``; :class:`Fatal` when the server refuses it for good (a 5xx), any other error
        when trying again later may work."""
        async with self._lock:
            try:
                client = await self._connected()
                await client.send_message(mail, sender=self._settings.address, recipients=[recipient])
            except aiosmtplib.SMTPRecipientsRefused as exc:
                raise Fatal(f"the SMTP server refused the recipient {recipient}: {_codes(exc)}") from None
            except aiosmtplib.SMTPResponseException as exc:
                await self._drop()
                if 500 <= exc.code < 600 and not isinstance(exc, aiosmtplib.SMTPAuthenticationError):
                    raise Fatal(f"the SMTP server refused the mail: {exc.code} {exc.message[:200]}") from None
                raise SmtpUnavailable(f"the SMTP server answered {exc.code} {exc.message[:200]}") from None
            except (aiosmtplib.SMTPException, OSError) as exc:
                await self._drop()
                raise SmtpUnavailable(f"the SMTP server could not be reached ({type(exc).__name__}: {exc})") from None
            self._used = self._clock()

    async def log_in(self) -> None:
        """Connect and log in now, kept for the first reply; raises what connecting or the login raised."""
        async with self._lock:
            try:
                await self._connected()
            except BaseException:
                await self._drop()
                raise
            self._used = self._clock()

    async def close(self) -> None:
        """Say goodbye to the server, if connected."""
        async with self._lock:
            await self._drop()

    async def _connected(self) -> aiosmtplib.SMTP:
        client = self._client
        if client is not None and client.is_connected and self._clock() - self._used < REUSE_SECONDS:
            return client
        await self._drop()
        settings = self._settings
        assert settings.password is not None
        client = smtp_client(settings, SMTP_TIMEOUT)
        await client.connect()
        self._client = client
        await client.login(settings.username or "", settings.password.get_secret_value())
        return client

    async def _drop(self) -> None:
        client, self._client = self._client, None
        if client is None or not client.is_connected:
            return
        try:
            await asyncio.wait_for(client.quit(), 5)
        except (aiosmtplib.SMTPException, OSError, TimeoutError):
            client.close()


def smtp_client(settings: EmailSettings, timeout: float) -> aiosmtplib.SMTP:
    """A client for the configured SMTP server, TLS as ``smtp_security`` says; not yet connected."""
    return aiosmtplib.SMTP(
        hostname=settings.smtp_host,
        port=settings.smtp_port,
        use_tls=settings.smtp_security == "ssl",
        start_tls=settings.smtp_security == "starttls",
        timeout=timeout,
    )


class SmtpUnavailable(Exception):
    """Sending failed for now (the server down, busy, or refusing the login): the outbox tries again."""


class EmailSender:
    """The handlers of the channel's outbound and events workers."""

    def __init__(
        self,
        *,
        settings: EmailSettings,
        bus: Bus,
        store: Store,
        ledger: Ledger,
        smtp: Smtp,
        pace: Pacer,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        assert settings.address is not None
        self._address = settings.address
        self._domain = settings.address.rsplit("@", 1)[1]
        self._bus = bus
        self._store = store
        self._ledger = ledger
        self._smtp = smtp
        self._pace = pace
        self._now = now
        self._sending = asyncio.Lock()

    async def deliver(self, delivery: Delivery) -> None:
        """Send one outbound message as one mail (a retry after it was accepted sends nothing)."""
        message = delivery.parse(OutboundMessage)
        if await self._bus.progress(delivery.id):
            return
        thread = await self._ledger.thread(message.in_reply_to, message.conversation)
        text, message_id = message.text, self._message_id(delivery, message.in_reply_to, message.sequence)
        if message.question is not None:
            # The answer comes as a reply to this mail: its Message-ID names the question it asks.
            text, message_id = f"{text}\n\n{HOW_TO_ANSWER}", question_message_id(message.question, self._domain)
        mail = reply_mail(
            text,
            sender=self._address,
            recipient=message.recipient,
            thread=thread,
            message_id=message_id,
            now=self._now(),
            button=message.button,
        )
        await self._send(mail, message.recipient, delivery.id)

    async def tell(self, delivery: Delivery) -> None:
        """Mail the user the one-line notice of a run's event, if it has one, in the conversation's thread."""
        notice = event_notice(delivery)
        if notice is None or await self._bus.progress(delivery.id):
            return
        thread = await self._ledger.thread(None, notice.conversation)
        mail = reply_mail(
            notice.text,
            sender=self._address,
            recipient=notice.recipient,
            thread=thread,
            message_id=self._message_id(delivery, notice.run_id, 0),
            now=self._now(),
        )
        await self._send(mail, notice.recipient, delivery.id)

    async def undeliverable(self, delivery: Delivery, error: BaseException) -> None:
        """A reply the SMTP server would not take, after every attempt: never hidden, it goes in the log."""
        await log_undeliverable(self._store, delivery, error, how="mailed to")

    async def _send(self, mail: EmailMessage, recipient: str, delivery_id: int) -> None:
        await self._pace.wait(recipient)
        started = time.perf_counter()
        # One mail at a time (there is one connection), and the record looked at again in turn: a message
        # whose lease ran out while it was being sent (a loop stalled on a loaded machine) is claimed again
        # by this process, and that second handling must find the mail sent rather than send it twice.
        async with self._sending:
            if await self._bus.progress(delivery_id):
                return
            await self._smtp.send(mail, recipient)
            await self._bus.set_progress(delivery_id, 1)
        log.info(
            "email: sent %s to %s (%.1f ms)", mail["Message-ID"], recipient, (time.perf_counter() - started) * 1000
        )

    def _message_id(self, delivery: Delivery, inbound: str | None, sequence: int) -> str:
        """Fixed per outbox message: the same on every retry of it."""
        left = re.sub(r"[^A-Za-z0-9_-]+", "-", inbound or "notice")[:80]
        return f"<vaultbot.{left}.{sequence}.{delivery.id}@{self._domain}>"


def question_message_id(question: str, domain: str) -> str:
    """The Message-ID of the mail that asks ``question`` (fixed: a retry sends the same mail)."""
    return f"<vaultbot.question.{question}@{domain}>"


def _codes(exc: aiosmtplib.SMTPRecipientsRefused) -> str:
    return "; ".join(f"{e.code} {e.message[:100]}" for e in exc.recipients) or "refused"
