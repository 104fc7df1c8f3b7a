"""The Matrix channel: the sync loop in, the durable outbox out.

Receiving drives ``/sync`` itself: every event a sync delivered is on the bus (deduped on its event
id) before that sync's ``next_batch`` is kept as the token the next start syncs from. A crash at any
point therefore means the homeserver delivers those events again and the bus drops the duplicates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from aiohttp import ClientError
from nio import AsyncClient, AsyncClientConfig, SyncResponse

from bot.backoff import Backoff
from bot.bus import Bus
from bot.channels.lifecycle import Lifecycle
from bot.channels.matrix.receiver import CHANNEL, Access, MatrixReceiver
from bot.channels.matrix.sender import MatrixSender
from bot.channels.matrix.session import Folder, MatrixRefused, log_in
from bot.channels.matrix.streams import Streams
from bot.channels.outbox import outbox_workers
from bot.channels.storing import STORE_ERRORS, StoreOutage
from bot.settings import MatrixSettings
from bot.store import Store
from bot.streaming import Progress
from vault import Vault

log = logging.getLogger(__name__)

# What storing a sync's events can fail with for a while (bot.channels.storing, and the homeserver
# unreachable while a file or a quoted message is fetched): the token is not kept, the sync is asked again.
SYNC_ERRORS = (*STORE_ERRORS, ClientError, TimeoutError)
BACKOFF = Backoff(first=1.0, most=60.0)
# Events of each room per sync; more that came meanwhile (a restart after a while) are fetched apart.
TIMELINE_LIMIT = 100
TYPING_MS = 30_000


class MatrixChannel(Lifecycle):
    """Serves one Matrix account until :meth:`stop`; shows long replies on ``progress`` as they are
    written. ``ready`` is set once logged in and synced once, and ``serving_as`` then says it."""

    def __init__(
        self,
        settings: MatrixSettings,
        *,
        bus: Bus,
        store: Store,
        notes: Vault,
        data: Path,
        progress: Progress | None = None,
        stream_interval: float = 1.0,
        poll_timeout: float = 30.0,
        timeline_limit: int = TIMELINE_LIMIT,
        max_attempts: int = 10,
        lease: float = 30.0,
    ) -> None:
        if not settings.enabled or settings.user_id is None:
            raise ValueError("the Matrix channel needs VAULTBOT_MATRIX__HOMESERVER and VAULTBOT_MATRIX__USER_ID")
        super().__init__()
        self._settings = settings
        self._folder = Folder(data / "matrix")
        # 429s and timeouts come back to this code, which obeys them through the bus or its own backoff.
        # Device keys (matrix-nio's store, on vodozemac) live beside the session: encrypted rooms work.
        config = AsyncClientConfig(
            max_limit_exceeded=0, max_timeouts=0, store_sync_tokens=False, encryption_enabled=True
        )
        self.client = AsyncClient(
            settings.homeserver or "", settings.user_id, store_path=str(self._folder.keys), config=config
        )
        self.receiver = MatrixReceiver(
            self.client, access=Access(frozenset(settings.allowed_users)), bus=bus, store=store, notes=notes
        )
        self.streams = Streams(self.client, progress, store, interval=stream_interval) if progress else None
        sender = MatrixSender(self.client, bus=bus, store=store, streams=self.streams)
        self.outbox_worker, self.events_worker = outbox_workers(
            bus, CHANNEL, sender, lease=lease, max_attempts=max_attempts
        )
        self._poll_ms = int(poll_timeout * 1000)
        self._filter = {"room": {"timeline": {"limit": timeline_limit}}, "presence": {"types": []}}

    async def run(self) -> None:
        """Receive and send until :meth:`stop`. Raises :class:`MatrixRefused` when the homeserver
        refuses the login (one it cannot be reached for is tried again with backoff)."""
        try:
            await asyncio.to_thread(self._folder.prepare)
            if not await self._log_in():
                return
            await asyncio.to_thread(self._folder.tighten_keys)
            users = ", ".join(self._settings.allowed_users)
            self.serving_as = f"Matrix as {self._settings.user_id} on {self._settings.homeserver} for {users}"
            await self.serve(
                (self.outbox_worker, self.events_worker),
                self._sync,
                beside=[self.streams.run] if self.streams is not None else [],
            )
        finally:
            await self.client.close()
            # matrix-nio closes its HTTP session but leaves the key store's database open.
            if self.client.store is not None:
                self.client.store.database.close()

    async def _log_in(self) -> bool:
        failures = 0
        while not self._stopping.is_set():
            try:
                await log_in(self.client, self._settings, self._folder)
                return True
            except MatrixRefused:
                raise
            except (ClientError, TimeoutError, OSError) as exc:
                failures += 1
                delay = BACKOFF.delay(failures)
                log.warning("matrix: %s cannot be reached (%s); trying again in %.0f s", self._settings.homeserver,
                            type(exc).__name__, delay)
                await self._pause(delay)
        return False

    async def _sync(self) -> None:
        token = await asyncio.to_thread(self._folder.read_token)
        storing = StoreOutage(CHANNEL, self._pause)
        failures = 0
        while not self._stopping.is_set():
            try:
                sync = await self._sync_once(token)
            except (ClientError, TimeoutError, OSError) as exc:
                failures += 1
                log.warning("matrix: sync failed (%s); retrying", type(exc).__name__)
                await self._pause(BACKOFF.delay(failures))
                continue
            if sync is None:
                return
            if not isinstance(sync, SyncResponse):
                failures += 1
                delay = (getattr(sync, "retry_after_ms", None) or 0) / 1000 or BACKOFF.delay(failures)
                log.warning("matrix: sync refused (%s); retrying in %.0f s", sync, delay)
                await self._pause(delay)
                continue
            try:
                rooms = await self.receiver.receive(sync, token)
                # Kept only now that every event of this sync is on the bus.
                await asyncio.to_thread(self._folder.write_token, sync.next_batch)
            except SYNC_ERRORS as exc:
                await storing.failed("a sync", exc, "the homeserver delivers it again")
                continue
            storing.stored()
            failures = 0
            token = sync.next_batch
            await self._exchange_keys()
            for room in rooms:
                with contextlib.suppress(ClientError, TimeoutError, OSError):
                    await self.client.room_typing(room, typing_state=True, timeout=TYPING_MS)
            if not self.ready.is_set():
                log.info("matrix: syncing as %s", self._settings.user_id)
                self.ready.set()

    async def _exchange_keys(self) -> None:
        """What end-to-end encryption asks after a sync: the bot's keys uploaded, the keys of the devices
        in its encrypted rooms asked for, sessions with them made, room keys sent to them."""
        client = self.client
        try:
            if client.should_upload_keys:
                await client.keys_upload()
            if client.should_query_keys:
                await client.keys_query()
            if client.should_claim_keys:
                await client.keys_claim(client.get_users_for_key_claiming())
            await client.send_to_device_messages()
        except (ClientError, TimeoutError, OSError) as exc:  # asked again after the next sync
            log.warning("matrix: exchanging encryption keys failed (%s)", type(exc).__name__)

    async def _sync_once(self, token: str | None) -> object | None:
        """One sync, or None when stopped meanwhile (the first one returns at once)."""
        timeout = self._poll_ms if token is not None and self.ready.is_set() else 0
        # The first sync of a start carries every joined room's state: resumed from a kept token, a quiet room
        # would not be in it, and matrix-nio refuses to send to a room it has not seen ("No such room"), so a
        # reply redone after a crash, or a reminder, waited until something happened there.
        first = not self.ready.is_set()
        syncing = asyncio.ensure_future(
            self.client.sync(timeout=timeout, since=token, sync_filter=self._filter, full_state=first)
        )
        stopping = asyncio.ensure_future(self._stopping.wait())
        done, _ = await asyncio.wait({syncing, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if syncing not in done:
            syncing.cancel()
            with contextlib.suppress(asyncio.CancelledError, ClientError, TimeoutError, OSError):
                await syncing
            return None
        stopping.cancel()
        return syncing.result()
