"""The bot's login, the sync token and the device's encryption keys, kept in the data folder:
``<data>/matrix/``, owner-only.

A password login is made once; its access token and device id are kept (``session.json``) so a
restart is the same device (a new device per start would pile up in the person's device list and
lose the server's de-duplication of sends by transaction id). ``sync-token`` is the ``next_batch``
of the last sync whose events are all on the bus: written only after they are, atomically.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path

from nio import AsyncClient, LoginResponse, WhoamiResponse

from bot.private_files import make_private_folder, open_private, tighten
from bot.settings import MatrixSettings


class MatrixRefused(Exception):
    """The homeserver refused the bot's login: a setting to fix, said in one line."""


@dataclass(frozen=True)
class Folder:
    """Where the channel keeps its files."""

    path: Path

    @property
    def token_file(self) -> Path:
        """The sync token of the last sync stored on the bus."""
        return self.path / "sync-token"

    @property
    def session_file(self) -> Path:
        """The access token and device id of the bot's login."""
        return self.path / "session.json"

    @property
    def keys(self) -> Path:
        """matrix-nio's store of the device's encryption keys and the sessions with other devices."""
        return self.path / "keys"

    def prepare(self) -> None:
        """Make the folders, owner-only (blocking)."""
        make_private_folder(self.path)
        make_private_folder(self.keys)

    def tighten_keys(self) -> None:
        """The key store's files owner-only, whatever the umask they were made with (blocking)."""
        for file in self.keys.iterdir():
            tighten(file)

    def read_token(self) -> str | None:
        """The kept sync token, or None before the first sync (blocking)."""
        try:
            return self.token_file.read_text().strip() or None
        except FileNotFoundError:
            return None

    def write_token(self, token: str) -> None:
        """Keep ``token`` (blocking): written to a temporary file, synced, renamed over the old one."""
        _write_private(self.token_file, token)

    def read_session(self) -> dict[str, str] | None:
        """The kept login, or None (blocking)."""
        try:
            data = json.loads(self.session_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_session(self, session: dict[str, str]) -> None:
        """Keep the login (blocking)."""
        _write_private(self.session_file, json.dumps(session))


def _write_private(path: Path, text: str) -> None:
    scratch = path.with_name(f".{path.name}.tmp")
    with open(scratch, "w", opener=open_private) as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(scratch, path)


async def log_in(client: AsyncClient, settings: MatrixSettings, folder: Folder) -> None:
    """Log ``client`` in: the kept login when the server still takes it, else the access token of the
    settings, else the password (kept for next time). Raises :class:`MatrixRefused` with the reason."""
    assert settings.user_id is not None
    kept = await asyncio.to_thread(folder.read_session)
    if kept and kept.get("user_id") == settings.user_id and kept.get("access_token"):
        client.restore_login(settings.user_id, kept.get("device_id", ""), kept["access_token"])
        if isinstance(await client.whoami(), WhoamiResponse):
            return
    if settings.access_token is not None:
        client.access_token = settings.access_token.get_secret_value()
        who = await client.whoami()
        if not isinstance(who, WhoamiResponse):
            raise MatrixRefused(f"{settings.homeserver} refused VAULTBOT_MATRIX__ACCESS_TOKEN ({who.message})")
        if who.user_id != settings.user_id:
            raise MatrixRefused(
                f"VAULTBOT_MATRIX__ACCESS_TOKEN is {who.user_id}'s, not VAULTBOT_MATRIX__USER_ID {settings.user_id}"
            )
        client.restore_login(settings.user_id, who.device_id or "", client.access_token)
        return
    assert settings.password is not None
    device = kept.get("device_id") if kept and kept.get("user_id") == settings.user_id else None
    if device:
        client.device_id = device
    answer = await client.login(settings.password.get_secret_value(), device_name=settings.device_name)
    if not isinstance(answer, LoginResponse):
        raise MatrixRefused(f"{settings.homeserver} refused the login of {settings.user_id} ({answer.message})")
    session = {"user_id": answer.user_id, "device_id": answer.device_id, "access_token": answer.access_token}
    await asyncio.to_thread(folder.write_session, session)
