"""The doctor's look at the Matrix channel: the login, and a room with each allowlisted person.

Nothing is sent and nothing kept: a kept session or the access token is asked who it is; a password
without a kept session logs in and straight out again (so no device is left behind).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from aiohttp import ClientError
from nio import (
    AsyncClient,
    AsyncClientConfig,
    JoinedMembersResponse,
    JoinedRoomsResponse,
    LoginResponse,
    RoomGetStateEventResponse,
    WhoamiResponse,
)

from bot.channels.matrix.session import Folder
from bot.settings import MatrixSettings


@dataclass(frozen=True)
class Probe:
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str


async def probe(settings: MatrixSettings, data: Path, *, timeout: float) -> list[Probe]:
    """The login and the rooms, each within ``timeout`` seconds."""
    assert settings.user_id is not None
    config = AsyncClientConfig(max_limit_exceeded=0, max_timeouts=0, request_timeout=timeout)
    client = AsyncClient(settings.homeserver or "", settings.user_id, config=config)
    try:
        return await asyncio.wait_for(_probe(client, settings, Folder(data / "matrix")), timeout * 3)
    except (ClientError, TimeoutError, OSError) as exc:
        return [Probe("matrix", False, f"{settings.homeserver} cannot be reached ({type(exc).__name__})")]
    finally:
        await client.close()


async def _probe(client: AsyncClient, settings: MatrixSettings, folder: Folder) -> list[Probe]:
    assert settings.user_id is not None
    kept = await asyncio.to_thread(folder.read_session)
    how = ""
    if kept and kept.get("user_id") == settings.user_id and kept.get("access_token"):
        client.restore_login(settings.user_id, kept.get("device_id", ""), kept["access_token"])
        how = "the kept session"
    elif settings.access_token is not None:
        client.access_token = settings.access_token.get_secret_value()
        how = "VAULTBOT_MATRIX__ACCESS_TOKEN"
    if how:
        who = await client.whoami()
        if not isinstance(who, WhoamiResponse) or who.user_id != settings.user_id:
            return [Probe("matrix", False, f"{settings.homeserver} refused {how} of {settings.user_id} ({who})")]
        login = Probe("matrix", True, f"{settings.user_id} on {settings.homeserver}: logged in ({how})")
        return [login, *await _rooms(client, settings)]
    assert settings.password is not None
    answer = await client.login(settings.password.get_secret_value(), device_name=f"{settings.device_name} doctor")
    if not isinstance(answer, LoginResponse):
        return [Probe("matrix", False, f"{settings.homeserver} refused the login of {settings.user_id} ({answer})")]
    try:
        login = Probe("matrix", True, f"{settings.user_id} on {settings.homeserver}: the password logs in")
        return [login, *await _rooms(client, settings)]
    finally:
        await client.logout()


async def _rooms(client: AsyncClient, settings: MatrixSettings) -> list[Probe]:
    """For each allowlisted person, the room the bot shares with them, if any, and whether it is served."""
    joined = await client.joined_rooms()
    if not isinstance(joined, JoinedRoomsResponse):
        return [Probe("matrix rooms", False, f"the homeserver would not list the bot's rooms ({joined})")]
    shared: dict[str, list[str]] = {user: [] for user in settings.allowed_users}
    for room in joined.rooms:
        members = await client.joined_members(room)
        if isinstance(members, JoinedMembersResponse):
            for member in members.members:
                if member.user_id in shared:
                    shared[member.user_id].append(room)
    found = []
    for user, rooms in shared.items():
        if not rooms:
            found.append(Probe("matrix rooms", False, f"no room with {user} yet: invite {settings.user_id} from there"))
            continue
        for room in rooms:
            encrypted = isinstance(await client.room_get_state_event(room, "m.room.encryption"),
                                   RoomGetStateEventResponse)
            found.append(Probe("matrix rooms", True, f"{room} with {user}: joined{', encrypted' if encrypted else ''}"))
    return found
