"""The e-mail channel: new mail by IMAP in, the durable outbox out by SMTP.

Receiving keeps one IMAP session on the mailbox: it takes every unseen mail (fetched without marking
it seen, stored on the bus or refused, then flagged ``\\Seen``), then waits for the server to say new
mail came (IDLE), or polls where the server lacks IDLE. A lost connection, a server restarted or
unreachable, is reconnected with the shared backoff; mail that came meanwhile is unseen and taken then.
A set-up that cannot work (a refused login, a TLS mismatch, nothing listening, at the IMAP or the SMTP
server) found at the first start stops it with :class:`~bot.channels.email.setup.EmailRefused`; once it
has served, it is retried.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import aiosmtplib

from bot.backoff import Backoff, describe
from bot.bus import Bus
from bot.channels.email.access import Access
from bot.channels.email.bounded import LIMITS, Limits, Reader, Unreadable
from bot.channels.email.headers import MAX_HEADER_BYTES, read_headers
from bot.channels.email.imap import ImapError, Mailbox
from bot.channels.email.ledger import Ledger
from bot.channels.email.reading import Mail
from bot.channels.email.receiver import CHANNEL, EmailReceiver, mail_key
from bot.channels.email.sender import EmailSender, Smtp
from bot.channels.email.setup import EmailRefused, imap_refusal, smtp_refusal
from bot.channels.lifecycle import Lifecycle
from bot.channels.outbox import outbox_workers
from bot.channels.pacing import Pacer
from bot.channels.storing import STORE_ERRORS, StoreOutage
from bot.db import Database
from bot.settings import EmailSettings
from bot.store import Store
from vault import Vault

log = logging.getLogger(__name__)

RECONNECT = Backoff(first=1.0, most=60.0)
# Seconds between looks at a mailbox whose server lacks IDLE.
POLL_SECONDS = 60.0
# Unseen mails taken per look at the mailbox (a command line of thousands of UIDs is past some servers'
# limits); the next look takes the next ones.
BATCH = 100
# Mail larger than this is read from its header alone, and an allowed sender is told it is too big.
MAX_MAIL_BYTES = 25 * 1024 * 1024
# Mail up to this size is fetched whole in one command (its header read from those bytes, the rest parsed
# only if its sender is served); larger mail's header comes first, and its body only for a served sender.
# So a stranger's mail costs at most this much transfer and memory, never parsing.
WHOLE_FETCH_BYTES = 256 * 1024


class EmailChannel(Lifecycle):
    """Serves the configured mailbox until :meth:`stop`. ``ready`` is set once the mailbox is first
    read (logged in, the folder selected), and ``serving_as`` then says it."""

    def __init__(
        self,
        settings: EmailSettings,
        *,
        db: Database,
        bus: Bus,
        store: Store,
        notes: Vault,
        pace: Pacer | None = None,
        poll_interval: float = POLL_SECONDS,
        reconnect: Backoff = RECONNECT,
        max_mail_bytes: int = MAX_MAIL_BYTES,
        limits: Limits = LIMITS,
        max_attempts: int = 10,
        lease: float = 30.0,
        tell: Callable[[str], None] = lambda line: None,
    ) -> None:
        if not settings.enabled or settings.address is None:
            raise ValueError("the e-mail channel needs VAULTBOT_EMAIL__IMAP_HOST and the settings that go with it")
        super().__init__()
        self._settings = settings
        self._poll = poll_interval
        self._reconnect = reconnect
        self._max_bytes = max_mail_bytes
        self._reader = Reader(limits)
        self._tell = tell
        ledger = Ledger(db)
        self.receiver = EmailReceiver(
            access=Access(
                address=settings.address,
                allowed=frozenset(settings.allowed_senders),
                trusted_authserv_id=settings.trusted_authserv_id,
                require_authenticated=settings.require_authenticated,
            ),
            db=db,
            bus=bus,
            store=store,
            notes=notes,
            ledger=ledger,
        )
        self._smtp = Smtp(settings)
        sender = EmailSender(
            settings=settings, bus=bus, store=store, ledger=ledger, smtp=self._smtp, pace=pace or Pacer()
        )
        self.outbox_worker, self.events_worker = outbox_workers(
            bus, CHANNEL, sender, lease=lease, max_attempts=max_attempts
        )
        # A mail that cannot be stored stays unseen and is taken again after a pause.
        self._storing = StoreOutage(CHANNEL, self._pause)

    async def run(self) -> None:
        """Receive and send until :meth:`stop`. Raises :class:`EmailRefused` when the first logins (IMAP,
        then SMTP) find the settings cannot work; the IMAP server unreachable for now is tried again with
        backoff, and ``tell`` hears it."""
        try:
            # The reading worker starts meanwhile, so the first mail does not wait for it.
            await self.serve((self.outbox_worker, self.events_worker), self._receive, beside=(self._start_reader,))
        finally:
            await self._smtp.close()
            await self._reader.close()  # a start that was still waiting for the fork server ends its worker itself

    async def _receive(self) -> None:
        settings = self._settings
        failures = 0
        while not self._stopping.is_set():
            try:
                mailbox = await Mailbox.open(settings)
            except (ImapError, OSError, TimeoutError) as exc:
                failures += 1
                await self._pause(self._cannot_open(exc, failures))
                continue
            how = "IDLE" if mailbox.idles else f"polling every {self._poll:g}s"
            log.info("email: reading %s at %s (%s)", settings.mailbox, settings.imap_host, how)
            try:
                if not self.ready.is_set():
                    await self._log_in_smtp()
                senders = ", ".join(settings.allowed_senders)
                self.serving_as = f"e-mail as {settings.address} ({settings.mailbox}, {how}) for {senders}"
                self.ready.set()
                while not self._stopping.is_set():
                    await self._take_new(mailbox)
                    # A session that served counts as a success: one that fails at once again and again
                    # backs off as failing logins do.
                    failures = 0
                    if not self._stopping.is_set():
                        await mailbox.wait(self._stopping, self._poll)
            except (ImapError, OSError, TimeoutError) as exc:
                failures += 1
                delay = self._reconnect.delay(failures)
                log.warning("email: lost the IMAP connection (%s); reconnecting in %.1fs", describe(exc), delay)
                await self._pause(delay)
            finally:
                await mailbox.close()

    def _cannot_open(self, error: BaseException, failures: int) -> float:
        """The seconds to wait before trying again; :class:`EmailRefused` when the channel never served and
        ``error`` says its settings cannot work."""
        settings = self._settings
        refusal = imap_refusal(error, settings)
        if refusal is not None and not self.ready.is_set():
            raise EmailRefused(refusal) from None
        delay = self._reconnect.delay(failures)
        where = f"{settings.imap_host}:{settings.imap_port}"
        said = f"cannot read {settings.mailbox} at {where} ({refusal or describe(error)})"
        log.warning("email: %s; trying again in %.1fs", said, delay)
        if not self.ready.is_set():
            self._tell(f"e-mail: {said}; trying again in {delay:.0f} s")
        return delay

    async def _log_in_smtp(self) -> None:
        """Log in to the SMTP server at the first start: :class:`EmailRefused` when the settings cannot
        work; a server unreachable for now is said, and replies wait in the outbox until it answers."""
        settings = self._settings
        try:
            await self._smtp.log_in()
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            refusal = smtp_refusal(exc, settings)
            if refusal is not None:
                raise EmailRefused(refusal) from None
            said = f"cannot reach the SMTP server at {settings.smtp_host}:{settings.smtp_port} ({describe(exc)})"
            log.warning("email: %s; replies wait in the outbox", said)
            self._tell(f"e-mail: {said}; replies wait in the outbox until it answers")

    async def _take_new(self, mailbox: Mailbox) -> None:
        """Take every unseen mail, until a look finds none."""
        while not self._stopping.is_set():
            uids = (await mailbox.unseen())[:BATCH]
            if not uids:
                return
            sizes = await mailbox.sizes(uids)
            for uid in uids:
                if self._stopping.is_set():
                    return
                if not await self._take(mailbox, uid, sizes.get(uid, 0)):
                    break  # storing failed: it paused; look again from the first unseen mail

    async def _take(self, mailbox: Mailbox, uid: int, size: int) -> bool:
        """Take one mail and flag it seen; False when storing it failed (it stays unseen). A small mail is
        fetched whole; a larger one's header first, within a bound, and the rest only when the sender is
        served. Either way only the header is read until the sender is known to be served."""
        whole = 0 < size <= WHOLE_FETCH_BYTES
        if whole:
            header = await mailbox.fetch(uid)
        else:
            header = await mailbox.fetch(uid, headers_only=True, most=MAX_HEADER_BYTES + 1)
        if header is None:
            return True  # gone meanwhile (expunged by another client)
        headers = await asyncio.to_thread(read_headers, header)
        key = mail_key(headers.message_id, mailbox.name, mailbox.uidvalidity, uid)
        where = f"{mailbox.name} (UID {uid})"
        try:
            if size > self._max_bytes:
                outcome = await self.receiver.too_big(headers, key, size, self._max_bytes)
            else:
                fetched = header if whole else None
                outcome = await self.receiver.take(headers, key, lambda: self._read(mailbox, uid, fetched), where)
        except STORE_ERRORS as exc:
            await self._storing.failed(f"mail {uid}", exc, "it stays unseen in the mailbox")
            return False
        self._storing.stored()
        await mailbox.mark_seen(uid)
        log.info("email: mail %s from %s: %s", uid, headers.sender or "no single sender", outcome)
        return True

    async def _read(self, mailbox: Mailbox, uid: int, raw: bytes | None) -> Mail:
        """The whole mail (``raw``, else fetched now), read within the channel's limits."""
        raw = raw if raw is not None else await mailbox.fetch(uid)
        if raw is None:
            raise Unreadable("it was gone from the mailbox")
        started = time.perf_counter()
        try:
            return await self._reader.read(raw)
        finally:
            log.info("email: read mail %s (%d bytes) in %.1f ms", uid, len(raw), (time.perf_counter() - started) * 1000)

    async def _start_reader(self) -> None:
        try:
            await self._reader.start()
        except Exception as exc:  # no process to be had now: the first mail tries again, and says so
            log.warning("email: could not start the mail reader yet (%s)", describe(exc))
