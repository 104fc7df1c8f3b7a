"""One IMAP session on the bot's mailbox, over aioimaplib: log in, find unseen mail, fetch it without
marking it seen, mark it seen, and wait for new mail (IDLE, or a pause where the server lacks IDLE).

aioimaplib passes over an untagged ``EXISTS`` that arrives while another command runs (the server says
"new mail" at the end of a SEARCH, and that mail is not in the SEARCH's answer). The protocol here notes
every ``EXISTS`` and ``RECENT``, so the channel looks again before it idles and no mail waits for the
next one. A lost connection ends a wait at once rather than when a command times out.

The password goes only into the LOGIN command (aioimaplib scrubs it from its debug log) and never into
an error: a refused login is reported in the server's words, which never hold the password.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from collections.abc import Awaitable
from typing import Any, TypeVar

from aioimaplib import aioimaplib

from bot.settings import EmailSettings

T = TypeVar("T")

# Seconds an IDLE lasts before it is renewed: under the 29 minutes after which servers may drop an idle
# client, and short enough that a connection that died without a word is found within minutes.
IDLE_SECONDS = 300.0
COMMAND_TIMEOUT = 30.0
# Seconds the server's greeting is waited for at most: servers greet at once, and one that stays silent
# is most often a TLS port reached without TLS, which should be said soon rather than after a timeout.
GREETING_SECONDS = 5.0
_CHANGE = re.compile(rb"^\*?\s*\d+ (EXISTS|RECENT)\b")
_UIDVALIDITY = re.compile(rb"\[UIDVALIDITY (\d+)\]")
_FETCHED = re.compile(rb"^\d+ FETCH \(.*UID (\d+)")
_SIZE = re.compile(rb"UID (\d+) RFC822\.SIZE (\d+)|RFC822\.SIZE (\d+) UID (\d+)")


class ImapError(Exception):
    """The IMAP server refused something, answered what cannot be used, or went away."""


class ConnectionLost(ImapError):
    """The connection to the IMAP server closed."""


class LoginRefused(ImapError):
    """The IMAP server refused the username and password: trying again cannot help. ``said`` is the
    server's reason."""

    def __init__(self, username: str, said: str) -> None:
        super().__init__(f"the IMAP server refused the login of {username}: {said}")
        self.said = said


class NoGreeting(ImapError):
    """The connection was made but the server said nothing: most often a port that expects TLS from the
    start, reached without it."""


class _Protocol(aioimaplib.IMAP4ClientProtocol):
    """aioimaplib's protocol, noting the server's word that the mailbox has new mail."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.changed = asyncio.Event()

    def _untagged_response(self, line: bytes) -> Any:
        if _CHANGE.match(line):
            self.changed.set()
        return super()._untagged_response(line)


class _Client(aioimaplib.IMAP4):
    def create_client(self, host: str, port: int, loop: Any, conn_lost_cb: Any = None, ssl_context: Any = None) -> None:
        local_loop = loop if loop is not None else asyncio.get_running_loop()
        self.protocol = _Protocol(local_loop, conn_lost_cb)
        self._client_task = local_loop.create_task(
            local_loop.create_connection(lambda: self.protocol, host, port, ssl=ssl_context)
        )


class Mailbox:
    """A logged-in session with ``settings.mailbox`` selected. Open with :meth:`open`, always :meth:`close`."""

    def __init__(self, client: _Client, lost: asyncio.Event, name: str, uidvalidity: int) -> None:
        self._client = client
        self._lost = lost
        self.name = name
        self.uidvalidity = uidvalidity

    @classmethod
    async def open(cls, settings: EmailSettings, *, timeout: float = COMMAND_TIMEOUT) -> Mailbox:
        """Connect, log in and select the mailbox; :class:`ImapError` or ``OSError`` says why not."""
        client, lost = await connect(settings, timeout=timeout)
        try:
            response = await client.select(aioimaplib.quoted(settings.mailbox))
            if response.result != "OK":
                raise ImapError(f"the IMAP server has no folder {settings.mailbox!r}: {_said(response)}")
            uidvalidity = next((int(m.group(1)) for m in map(_UIDVALIDITY.search, _lines(response)) if m), 0)
        except BaseException:
            await _close(client)
            raise
        return cls(client, lost, settings.mailbox, uidvalidity)

    @property
    def idles(self) -> bool:
        """Whether the server offers IDLE (else the channel polls)."""
        return self._client.has_capability("IDLE")

    async def unseen(self) -> list[int]:
        """The UIDs of the unseen mail, oldest first. The NOOP first brings the session up to date, so the
        search sees mail that arrived since the last command."""
        self._client.protocol.changed.clear()
        await self._ok(self._client.noop(), "NOOP")
        response = await self._ok(self._client.uid_search("UNSEEN", charset=None), "UID SEARCH")
        # aioimaplib hands over the untagged "* SEARCH 3 7" as its numbers; the last line is the tagged one.
        words = [word for line in _lines(response)[:-1] for word in line.split()]
        return sorted({int(word) for word in words if word.isdigit()})

    @property
    def changed(self) -> bool:
        """Whether the server said the mailbox has new mail since :meth:`unseen` last looked."""
        return self._client.protocol.changed.is_set()

    async def sizes(self, uids: list[int]) -> dict[int, int]:
        """Each mail's size in bytes, by UID."""
        response = await self._ok(
            self._client.uid("fetch", ",".join(map(str, uids)), "(UID RFC822.SIZE)"), "UID FETCH RFC822.SIZE"
        )
        sizes: dict[int, int] = {}
        for line in _lines(response):
            match = _SIZE.search(line)
            if match:
                uid, size = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
                sizes[int(uid)] = int(size)
        return sizes

    async def fetch(self, uid: int, *, headers_only: bool = False, most: int | None = None) -> bytes | None:
        """The raw mail (or only its header; ``most``: its first bytes only), without marking it seen;
        None when it is gone."""
        section = "BODY.PEEK[HEADER]" if headers_only else "BODY.PEEK[]"
        if most is not None:
            section += f"<0.{most}>"
        response = await self._ok(self._client.uid("fetch", str(uid), f"(UID {section})"), "UID FETCH")
        lines = response.lines
        for index, line in enumerate(lines):
            if isinstance(line, bytes) and _FETCHED.match(line) and index + 1 < len(lines):
                literal = lines[index + 1]
                if isinstance(literal, bytes | bytearray):
                    return bytes(literal)
        return None

    async def mark_seen(self, uid: int) -> None:
        """Flag the mail ``\\Seen``: it has been taken (stored on the bus, or refused and logged)."""
        await self._ok(self._client.uid("store", str(uid), "+FLAGS.SILENT", r"(\Seen)"), "UID STORE")

    async def wait(self, stopping: asyncio.Event, poll: float) -> None:
        """Return when new mail may have come: the server says so (IDLE), ``poll`` seconds have passed
        (without IDLE), the IDLE is due for renewal, or ``stopping`` is set. Raises
        :class:`ConnectionLost` when the connection closes meanwhile."""
        if self.changed:
            return
        if not self.idles:
            await self._until(asyncio.sleep(poll), stopping)
            return
        # aioimaplib waits for the server's go-ahead to IDLE without a timeout, and a connection closed
        # before it came would never end the wait (nor would stop()).
        starting = asyncio.ensure_future(
            asyncio.wait_for(self._client.idle_start(timeout=IDLE_SECONDS), COMMAND_TIMEOUT)
        )
        try:
            await self._until(starting, stopping)
        except (aioimaplib.AioImapException, TimeoutError) as exc:
            raise ImapError(f"IDLE failed: {type(exc).__name__}") from None
        if starting.cancelled():  # stopping
            return
        idle = starting.result()
        try:
            push = self._client.wait_server_push(timeout=IDLE_SECONDS)
            with contextlib.suppress(TimeoutError):
                await self._until(push, stopping)
        finally:
            if self._client.has_pending_idle() and not self._lost.is_set():
                self._client.idle_done()
                await asyncio.wait({idle}, timeout=COMMAND_TIMEOUT)
            if not idle.done():
                idle.cancel()
            elif not idle.cancelled():
                idle.exception()  # seen: a failed IDLE shows in the next command, which fails too
        if self._lost.is_set():
            raise ConnectionLost("the IMAP server closed the connection")

    async def close(self) -> None:
        """Log out (when the connection still stands) and close it."""
        await _close(self._client)

    async def _until(self, waiting: Any, stopping: asyncio.Event) -> None:
        """Await ``waiting`` until it ends, ``stopping`` is set or the connection is lost."""
        tasks = [asyncio.ensure_future(step) for step in (waiting, stopping.wait(), self._lost.wait())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._lost.is_set():
            raise ConnectionLost("the IMAP server closed the connection")
        if tasks[0] in done and not tasks[0].cancelled() and tasks[0].exception() is not None:
            raise tasks[0].exception()  # type: ignore[misc]

    async def _ok(self, command: Any, name: str) -> aioimaplib.Response:
        if self._lost.is_set():
            command.close()
            raise ConnectionLost("the IMAP server closed the connection")
        try:
            response: aioimaplib.Response = await _unless_lost(command, self._lost)
        except (aioimaplib.AioImapException, TimeoutError) as exc:
            raise ImapError(f"{name} failed: {type(exc).__name__}") from None
        if response.result != "OK":
            raise ImapError(f"the IMAP server refused {name}: {_said(response)}")
        return response


async def connect(settings: EmailSettings, *, timeout: float) -> tuple[_Client, asyncio.Event]:
    """A logged-in client (TLS as ``imap_security`` says) and the event set when its connection closes."""
    assert settings.imap_host is not None and settings.username is not None and settings.password is not None
    lost = asyncio.Event()
    context = ssl.create_default_context() if settings.imap_security == "ssl" else None
    client = _Client(
        settings.imap_host,
        settings.imap_port,
        timeout=timeout,
        conn_lost_cb=lambda _exc: lost.set(),
        ssl_context=context,
    )
    try:
        # A connection that closes meanwhile ends each step at once (aioimaplib would wait out its timeout).
        greeting = asyncio.wait_for(client.wait_hello_from_server(), min(timeout, GREETING_SECONDS))
        try:
            await _unless_lost(greeting, lost)
        except (aioimaplib.AioImapException, TimeoutError) as exc:
            raise NoGreeting(f"the IMAP server did not greet ({type(exc).__name__})") from None
        if settings.imap_security == "starttls":
            await _unless_lost(_starttls(client, settings.imap_host, timeout), lost)
        try:
            login = client.login(aioimaplib.quoted(settings.username), settings.password.get_secret_value())
            response = await _unless_lost(login, lost)
        except (aioimaplib.AioImapException, TimeoutError) as exc:
            raise ImapError(f"the IMAP login did not complete ({type(exc).__name__})") from None
        if response.result != "OK":
            raise LoginRefused(settings.username, _said(response))
    except BaseException:
        await _close(client)
        raise
    return client, lost


async def _starttls(client: _Client, host: str, timeout: float) -> None:
    """Upgrade the connection to TLS (RFC 3501's STARTTLS), which aioimaplib does not do itself."""
    protocol = client.protocol
    if not client.has_capability("STARTTLS"):
        raise ImapError("the IMAP server does not offer STARTTLS (set VAULTBOT_EMAIL__IMAP_SECURITY to ssl)")
    command = aioimaplib.Command("STARTTLS", protocol.new_tag(), loop=protocol.loop)
    response = await asyncio.wait_for(protocol.execute(command), timeout)
    if response.result != "OK":
        raise ImapError(f"the IMAP server refused STARTTLS: {_said(response)}")
    loop = asyncio.get_running_loop()
    protocol.transport = await asyncio.wait_for(
        loop.start_tls(protocol.transport, protocol, ssl.create_default_context(), server_hostname=host), timeout
    )
    # What the server offered before TLS may not be what it offers now (RFC 3501, 6.2.1).
    await asyncio.wait_for(protocol.capability(), timeout)


async def _close(client: _Client) -> None:
    with contextlib.suppress(Exception):
        if client.protocol is not None and client.protocol.transport is not None:
            if client.get_state() in (aioimaplib.AUTH, aioimaplib.SELECTED, aioimaplib.NONAUTH):
                await asyncio.wait_for(client.logout(), 5)
    with contextlib.suppress(Exception):
        if client.protocol is not None and client.protocol.transport is not None:
            client.protocol.transport.close()
    # What aioimaplib still waits for on this connection (an IDLE the server never answered) never comes.
    for task in [*client.tasks, *(client.protocol.tasks if client.protocol is not None else ())]:
        task.cancel()


async def _unless_lost(step: Awaitable[T], lost: asyncio.Event) -> T:
    """Await ``step``, or raise :class:`ConnectionLost` as soon as the connection closes."""
    waiting = asyncio.ensure_future(step)
    closed = asyncio.ensure_future(lost.wait())
    try:
        done, _ = await asyncio.wait({waiting, closed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        closed.cancel()
    if waiting not in done:
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        raise ConnectionLost("the IMAP server closed the connection")
    return waiting.result()


def _lines(response: aioimaplib.Response) -> list[bytes]:
    return [bytes(line) for line in response.lines if isinstance(line, bytes | bytearray)]


def _said(response: aioimaplib.Response) -> str:
    """The server's last line, as text (a refusal's reason)."""
    lines = _lines(response)
    return lines[-1].decode("utf-8", errors="replace").strip()[:200] if lines else response.result
