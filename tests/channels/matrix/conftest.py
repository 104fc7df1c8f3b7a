"""Fixtures for the Matrix tests: a real Synapse on 127.0.0.1 (one per test process, started by the
tests themselves), accounts on it, the person's own matrix-nio client, and the channel served in-process
beside a runner worker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from nio import AsyncClient, AsyncClientConfig, RoomCreateResponse, RoomMessagesResponse

from bot.app import App
from bot.channels.matrix import MatrixChannel
from tests.fakes.synapse import Account, Synapse


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synapse]:
    with Synapse(tmp_path_factory.mktemp("synapse")) as server:
        yield server


@dataclass
class Person:
    """Someone with a Matrix account, driving their own matrix-nio client."""

    account: Account
    client: AsyncClient
    server: Synapse

    @property
    def user_id(self) -> str:
        return self.account.user_id

    async def direct_room(self, bot: str) -> str:
        """A direct room with ``bot`` invited."""
        answer = await self.client.room_create(is_direct=True, invite=[bot])
        assert isinstance(answer, RoomCreateResponse), answer
        return answer.room_id

    async def say(self, room: str, text: str, **content: Any) -> str:
        """Send ``text`` to ``room``; its event id."""
        answer = await self.client.room_send(room, "m.room.message", {"msgtype": "m.text", "body": text, **content})
        return str(answer.event_id)  # type: ignore[union-attr]

    async def messages(self, room: str, sender: str) -> list[dict[str, Any]]:
        """The contents of ``sender``'s messages in ``room``, oldest first."""
        answer = await self.client.room_messages(room, start="", limit=100, direction="f")  # type: ignore[arg-type]
        assert isinstance(answer, RoomMessagesResponse), answer
        return [
            e.source["content"]
            for e in answer.chunk
            if e.source.get("sender") == sender and e.source.get("type") == "m.room.message"
        ]

    async def members(self, room: str) -> dict[str, str]:
        """Each member's membership of ``room``."""
        state = await self.server_state(room)
        return {e["state_key"]: e["content"]["membership"] for e in state if e["type"] == "m.room.member"}

    async def server_state(self, room: str) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.server.request, "GET", f"/_matrix/client/v3/rooms/{room}/state",
                                       None, self.account)


@pytest.fixture
async def people(synapse: Synapse) -> AsyncIterator[Callable[[], Awaitable[Person]]]:
    made: list[Person] = []

    async def make() -> Person:
        account = await asyncio.to_thread(synapse.register)
        client = AsyncClient(synapse.url, account.user_id, config=AsyncClientConfig(max_limit_exceeded=0))
        client.restore_login(account.user_id, account.device_id, account.access_token)
        made.append(Person(account, client, synapse))
        return made[-1]

    yield make
    for person in made:
        await person.client.close()


async def eventually(check: Callable[[], Awaitable[Any]], what: str, timeout: float = 30.0) -> Any:
    """Wait until ``check()`` gives something true, and return it (no sleep as synchronisation: a bound)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@dataclass
class Served:
    app: App
    channel: MatrixChannel
    bot: Account


@pytest.fixture
async def serve(
    synapse: Synapse, make_app: Callable[..., Awaitable[App]]
) -> AsyncIterator[Callable[..., Awaitable[Served]]]:
    """The channel and a runner worker on a fresh app (or ``app``, a restart) for a new bot account (or
    ``bot``); ``options`` go to the channel."""
    running: list[tuple[MatrixChannel, Any, asyncio.Task[None], asyncio.Task[None]]] = []

    async def start(
        allowed: list[str], model: Any = None, *, app: App | None = None, bot: Account | None = None, **options: Any
    ) -> Served:
        bot = bot or await asyncio.to_thread(synapse.register)
        matrix = {"homeserver": synapse.url, "user_id": bot.user_id, "password": bot.password, "allowed_users": allowed}
        app = app or await make_app(model, matrix=matrix)
        channel = MatrixChannel(
            app.settings.matrix,
            bus=app.bus,
            store=app.store,
            notes=app.notes,
            data=app.settings.store.path.parent,
            poll_timeout=1,
            # Replies shown as they are written when a test sets how often: `vaultbot run` always shows them.
            progress=app.progress if "stream_interval" in options else None,
            **options,
        )
        worker = app.runner_worker()
        running.append((channel, worker, asyncio.create_task(channel.run()), asyncio.create_task(worker.run())))
        await asyncio.wait_for(channel.ready.wait(), 30)
        return Served(app, channel, bot)

    async def stop_all() -> None:
        for channel, worker, channel_task, worker_task in running:
            await channel.stop()
            await worker.stop(5)
            await asyncio.gather(channel_task, worker_task, return_exceptions=True)
        running.clear()

    start.stop_all = stop_all  # type: ignore[attr-defined]
    yield start
    await stop_all()
