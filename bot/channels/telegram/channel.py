"""The Telegram channel: long polling (or a webhook) in, the durable outbox out.

Receiving drives ``getUpdates`` itself rather than ptb's poller, which confirms updates before
handlers run: every update is on the bus (deduped on its update_id) before the next
``getUpdates`` call confirms it with a higher offset. A crash at any point therefore means
Telegram delivers the update again and the bus drops the duplicate.

Only one process may poll a token. Telegram answers the older of two waiting ``getUpdates`` calls
409 Conflict (and then at most one conflict every 3 seconds), so the process that started last
would win. Here the one that was first stays: a process that has polled for :data:`SETTLED`
seconds answers a conflict by polling again at once, which ends the newcomer's call with a
conflict while that one is still starting, and a process still starting takes a conflict to mean
another one was there first, says so and stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from telegram import Bot, BotCommand, MenuButton, MenuButtonDefault, MenuButtonWebApp, WebAppInfo
from telegram.error import Conflict, NetworkError, RetryAfter, TelegramError, TimedOut
from telegram.ext import AIORateLimiter, ExtBot
from telegram.request import HTTPXRequest

from bot.backoff import Backoff
from bot.bus import Bus
from bot.channels.lifecycle import Lifecycle
from bot.channels.outbox import outbox_workers
from bot.channels.pacing import Pacer
from bot.channels.storing import STORE_ERRORS, StoreOutage
from bot.channels.telegram.access import Access
from bot.channels.telegram.drafts import Drafts
from bot.channels.telegram.errors import TelegramConflict, TelegramUnreachable, retry_after_seconds
from bot.channels.telegram.identity import introduce
from bot.channels.telegram.indicator import Typing
from bot.channels.telegram.receiver import CHANNEL, TelegramReceiver
from bot.channels.telegram.sender import TelegramSender
from bot.channels.telegram.webhook import WebhookServer
from bot.menu import COMMANDS
from bot.settings import TelegramSettings
from bot.store import Store
from bot.streaming import Progress
from vault import Vault

log = logging.getLogger(__name__)

# ptb 22 is moving durations (a 429's retry_after, a recording's length) from seconds to timedelta
# and, until a program opts in, warns as it builds every 429 error. This channel reads both forms.
os.environ.setdefault("PTB_TIMEDELTA", "true")

ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
# What storing an update can fail with for a while (bot.channels.storing, and Telegram unreachable while
# fetching a file): the update is left for Telegram to redeliver.
UPDATE_ERRORS = (*STORE_ERRORS, TelegramError)
# Waits between getUpdates calls that failed in a row.
POLL_BACKOFF = Backoff(first=2.0, most=60.0)
# Seconds of polling after which a conflict means another process is starting on this token rather
# than that one was polling before this one: well past Telegram's 3 s between two conflicts, so a
# newcomer hears its conflict while it is still starting even on a slow machine.
SETTLED = 10.0


class TelegramChannel(Lifecycle):
    """Serves one bot token until :meth:`stop`; shows the replies on ``progress`` as they are written
    when ``settings.draft_interval`` is above 0. With ``review_app`` (the review page's Mini App
    address), each allowlisted user's chat gets a "Review" menu button that opens it. ``tell`` hears
    Telegram unreachable at start, a line each time; ``ready`` is set once Telegram has said who the
    bot is and updates can come (the webhook listening), and ``serving_as`` then says it."""

    def __init__(
        self,
        settings: TelegramSettings,
        *,
        bus: Bus,
        store: Store,
        notes: Vault,
        progress: Progress | None = None,
        poll_timeout: int = 25,
        pace: Pacer | None = None,
        typing_interval: float = 4.0,
        max_attempts: int = 10,
        lease: float = 30.0,
        review_app: str | None = None,
        tell: Callable[[str], None] | None = None,
        settled: float = SETTLED,
    ) -> None:
        if settings.token is None:
            raise ValueError("the Telegram channel needs a token")
        super().__init__()
        self.bot: Bot = ExtBot(
            settings.token.get_secret_value(),
            base_url=settings.base_url,
            base_file_url=settings.base_file_url,
            rate_limiter=AIORateLimiter(max_retries=0),
            request=HTTPXRequest(connection_pool_size=8),
            get_updates_request=HTTPXRequest(read_timeout=poll_timeout + 10),
        )
        self._settings = settings
        self._review_app = review_app
        self._tell = tell or (lambda line: None)
        self._settled = settled
        self._typing = Typing(self.bot, bus, interval=typing_interval)
        self.receiver = TelegramReceiver(
            self.bot,
            access=Access(set(settings.allowed_users), settings.allow_groups),
            bus=bus,
            store=store,
            notes=notes,
            typing=self._typing,
            album_wait=settings.album_wait,
        )
        self._draft_bot: Bot | None = None
        self.drafts: Drafts | None = None
        if progress is not None and settings.draft_interval > 0:
            # Drafts get their own connections and no rate limiter: they never hold up a real message.
            self._draft_bot = Bot(
                settings.token.get_secret_value(),
                base_url=settings.base_url,
                base_file_url=settings.base_file_url,
                request=HTTPXRequest(connection_pool_size=4),
            )
            self.drafts = Drafts(self._draft_bot, progress, interval=settings.draft_interval)
        sender = TelegramSender(
            self.bot, bus=bus, store=store, typing=self._typing, pace=pace or Pacer(1.0), drafts=self.drafts
        )
        self.webhook = (
            WebhookServer(
                self.receiver.receive_raw,
                secret=settings.webhook_secret.get_secret_value(),
                path=urlsplit(settings.webhook_url).path or "/",
                address=settings.webhook_listen,
                port=settings.webhook_port,
            )
            if settings.webhook_url and settings.webhook_secret
            else None
        )
        self._poll_timeout = poll_timeout
        self.outbox_worker, self.events_worker = outbox_workers(
            bus, CHANNEL, sender, lease=lease, max_attempts=max_attempts
        )

    async def run(self) -> None:
        """Receive and send until :meth:`stop`. Raises :class:`TelegramRefused` when Telegram refuses
        the token or the address (Telegram unreachable at start is tried again with backoff), and
        :class:`TelegramConflict` when another process was polling the token first."""
        try:
            if not await self._introduce():
                return  # stopped before Telegram answered
        except BaseException:
            await self.bot.shutdown()
            raise
        how = f"webhook {self._settings.webhook_url}" if self.webhook is not None else "polling"
        users = ", ".join(str(user) for user in self._settings.allowed_users)
        self.serving_as = f"Telegram as @{self.bot.username} ({how}) for user ids {users}"
        async with self.bot, self._draft_bot or contextlib.nullcontext():
            await self.bot.set_my_commands([BotCommand(name, about) for name, about in COMMANDS])
            await self._set_menu_buttons()
            try:
                await self.serve(
                    (self.outbox_worker, self.events_worker),
                    self._receive,
                    beside=[self.drafts.run] if self.drafts is not None else [],
                )
            finally:
                await self._typing.close()

    async def _receive(self) -> None:
        if self.webhook is not None:
            await self._serve_webhook(self.webhook)
        else:
            await self.bot.delete_webhook()
            log.info("telegram: polling as @%s", self.bot.username)
            self.ready.set()
            await self._poll()

    async def _introduce(self) -> bool:
        """Ask Telegram who the bot is, again with backoff while it cannot be reached (at boot the
        network may come up after the bot, and an outage passes); False if stopped meanwhile."""
        failures = 0
        while not self._stopping.is_set():
            try:
                await introduce(self.bot, self._settings)
            except TelegramUnreachable as exc:
                failures += 1
                delay = exc.retry_after or POLL_BACKOFF.delay(failures)
                log.warning("telegram: %s; trying again in %.0f s", exc, delay)
                self._tell(f"{exc}; trying again in {delay:.0f} s")
                await self._pause(delay)
                continue
            return True
        return False

    async def _set_menu_buttons(self) -> None:
        """The "Review" menu button in each allowlisted user's chat, or Telegram's default one when
        there is no Mini App (so a button left from an earlier setting does not lead nowhere). A chat
        Telegram refuses (a user who never opened one with the bot) is logged and skipped."""
        button: MenuButton = (
            MenuButtonWebApp("Review", WebAppInfo(self._review_app)) if self._review_app else MenuButtonDefault()
        )
        for user in self._settings.allowed_users:
            try:
                await self.bot.set_chat_menu_button(chat_id=user, menu_button=button)
            except TelegramError as exc:
                log.warning("telegram: could not set the menu button of chat %s: %s", user, exc)

    async def _serve_webhook(self, webhook: WebhookServer) -> None:
        settings = self._settings
        assert settings.webhook_url is not None and settings.webhook_secret is not None
        server = webhook.listen()  # a port in use is said alone, before the channel is ready
        stop = asyncio.Event()
        serving = asyncio.create_task(server.serve(stop))
        try:
            await self.bot.set_webhook(
                settings.webhook_url,
                secret_token=settings.webhook_secret.get_secret_value(),
                allowed_updates=ALLOWED_UPDATES,
            )
            where = f"{settings.webhook_listen}:{server.port}"
            log.info("telegram: webhook for @%s listening on %s", self.bot.username, where)
            self.ready.set()
            await self._stopping.wait()
        finally:
            # Posts in flight are stored and answered before the server closes.
            stop.set()
            await serving

    async def _poll(self) -> None:
        offset: int | None = None
        failures = 0
        storing = StoreOutage("telegram", self._pause)
        loop = asyncio.get_running_loop()
        began = loop.time()
        conflicts = 0
        while not self._stopping.is_set():
            try:
                raw = await self._get_updates(offset)
            except Conflict as exc:
                if loop.time() - began < self._settled:
                    raise TelegramConflict(
                        f"another process is already polling @{self.bot.username}'s token (Telegram answered "
                        "409 Conflict), so this one stops: stop that one first to start here"
                    ) from None
                conflicts += 1
                if conflicts == 1:
                    log.warning(
                        "telegram: another process polled this bot token (%s); this one keeps polling, "
                        "which tells that one to stop",
                        exc,
                    )
                if "getupdates" not in str(exc).lower():  # a webhook set meanwhile: no poller to outlast
                    await self._pause(POLL_BACKOFF.delay(conflicts))
                continue  # at once: the newcomer hears its conflict while it is still starting
            except RetryAfter as exc:
                await self._pause(retry_after_seconds(exc))
                continue
            except (NetworkError, TimedOut) as exc:
                failures += 1
                log.warning("telegram: getUpdates failed (%s); retrying", exc)
                await self._pause(POLL_BACKOFF.delay(failures))
                continue
            failures = 0
            conflicts = 0
            for data in raw:
                if self._stopping.is_set():
                    break
                try:
                    await self.receiver.receive_raw(data)
                except UPDATE_ERRORS as exc:
                    # Not confirmed: the next getUpdates asks from this update on, so Telegram
                    # delivers it again; the ones before it are stored and get confirmed.
                    await storing.failed(f"update {data['update_id']}", exc, "Telegram keeps it")
                    break
                storing.stored()
                # Confirmed to Telegram only by the next getUpdates, after this one is on the bus.
                offset = int(data["update_id"]) + 1

    async def _get_updates(self, offset: int | None) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {"timeout": self._poll_timeout, "allowed_updates": ALLOWED_UPDATES}
        if offset is not None:
            kwargs["offset"] = offset
        # The raw call, not Bot.get_updates: that one parses the whole batch at once, so a single
        # malformed update would fail every poll forever; here each update is parsed on its own.
        # Bot API method names are case-insensitive; the lower-case name keeps ptb from warning
        # that a typed wrapper exists.
        getting = asyncio.ensure_future(
            self.bot.do_api_request("getupdates", api_kwargs=kwargs, read_timeout=self._poll_timeout + 10)
        )
        stopping = asyncio.ensure_future(self._stopping.wait())
        done, _ = await asyncio.wait({getting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if getting not in done:
            getting.cancel()
            with contextlib.suppress(asyncio.CancelledError, TelegramError):
                await getting
            return []
        stopping.cancel()
        result = getting.result()
        return [u for u in result if isinstance(u, dict) and isinstance(u.get("update_id"), int)]
