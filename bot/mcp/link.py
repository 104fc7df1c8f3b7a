"""One MCP server and its session, shared by every conversation: started, restarted and stopped here.

A server is someone else's program, so everything it does wrong stays here. It may not start,
never answer, print garbage, exit mid-call, hang, or answer too much: each becomes a failure
result for the call that met it (``unavailable`` or ``timeout``, both retryable), a ``state`` and
``reason`` for ``vaultbot doctor``, and a restart on the next call. Consecutive failures space the
restarts out (``restart_delay``); a call that succeeds resets the count.

The session lives in a task of its own (``_hold``): the SDK's transports are anyio task groups that
must be entered and left by one task, while calls come from every conversation's task.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CONNECTION_CLOSED, Implementation, Tool

from bot.backoff import Backoff
from bot.mcp.content import source, to_result
from bot.mcp.naming import Listing, offer
from bot.mcp.secrets import Secrets
from bot.settings import McpServerSettings
from bot.tools import ContentResult, ToolError

log = logging.getLogger(__name__)

LEASH = Path(__file__).with_name("leash.py")
MAX_RESTART_DELAY = 60.0
MAX_TOOL_PAGES = 20
STDERR_KEPT = 2000  # characters of the server's standard error kept to say why it failed


_RESTARTS = Backoff(first=1.0, most=MAX_RESTART_DELAY)


def restart_delay(failures: int) -> float:
    """Seconds before a start after ``failures`` consecutive failures: none after the first (a server
    that died once is started again at once), then 1, 2, 4… up to a minute."""
    return 0.0 if failures <= 1 else _RESTARTS.delay(failures - 1)


class ServerLink:
    """A configured server: ``state`` is ``not started``, ``ready``, ``failed`` or ``stopped``."""

    def __init__(self, name: str, config: McpServerSettings, *, on_change: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self.config = config
        self.secrets = Secrets(config)
        self.state = "not started"
        self.reason: str | None = None
        self.listing = Listing()
        self._on_change = on_change
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._starting = asyncio.Lock()
        self._failures = 0
        self._not_before = 0.0
        # The end of what the server said about itself: its standard error (stdio), its last HTTP error status.
        self._said = ""
        self._tasks: set[asyncio.Task[None]] = set()
        self._holder: asyncio.Task[None] | None = None

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "stdio" if self.config.command is not None else "http"

    def retry_in(self) -> float:
        """Seconds until the next start may be tried."""
        return max(0.0, self._not_before - time.monotonic())

    async def start(self) -> bool:
        """Connect and list the tools, within ``start_timeout``; False (with ``reason``) when that failed
        or the last failure is too recent to try again."""
        async with self._starting:
            if self._client is not None:
                return True
            if self.retry_in() > 0:
                return False
            started = time.perf_counter()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            self._stop = asyncio.Event()
            self._said = ""
            self._holder = self._keep(self._hold(ready))
            try:
                async with asyncio.timeout(self.config.start_timeout):
                    await asyncio.shield(ready)
            except TimeoutError:
                ready.cancel()
                self._failed(f"did not answer within {self.config.start_timeout:g} s of starting")
                return False
            except Exception as exc:  # whatever the server did: the reason is the finding
                self._failed(self._why(exc))
                return False
            self.state, self.reason = "ready", None
            log.info(
                "→ mcp %s ready: %d tool(s) in %.0f ms",
                self.name,
                len(self.listing.offered),
                (time.perf_counter() - started) * 1000,
            )
            return True

    async def call(self, tool: str, arguments: dict[str, Any]) -> ContentResult:
        """Call ``tool`` with ``arguments``; raises ``ToolError`` for every failure."""
        if not await self.start():
            wait = self.retry_in()
            later = (
                f"; it is tried again in {math.ceil(wait)} s" if wait > 0 else "; it is tried again on the next call"
            )
            raise ToolError(
                f"The MCP server {self.name} is unavailable ({self.reason}){later}.",
                error_type="unavailable",
                retryable=True,
            )
        client = self._client
        assert client is not None
        try:
            async with asyncio.timeout(self.config.timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            self._failed(f"a call to {tool} took longer than {self.config.timeout:g} s")
            raise ToolError(
                f"{tool} on the MCP server {self.name} did not answer within {self.config.timeout:g} s; "
                "the server is restarted on the next call.",
                error_type="timeout",
                retryable=True,
            ) from None
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:  # the server answered, with a protocol error
                raise ToolError(
                    self.secrets.mask(f"The MCP server {self.name} refused the call: {exc.message}"),
                    error_type="server_error",
                    untrusted=source(self.name),
                ) from None
            self._failed(self._why(exc))
            raise self._unavailable() from None
        except Exception as exc:  # the connection broke or the answer was not MCP
            self._failed(self._why(exc))
            raise self._unavailable() from None
        self._failures = 0
        return to_result(result, self.secrets, server=self.name)

    async def stop(self) -> None:
        """Stop the server (stdin closed, then its process group signalled) and wait for it."""
        self._let_go()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self.state = "stopped"

    def _unavailable(self) -> ToolError:
        return ToolError(
            f"The MCP server {self.name} stopped working ({self.reason}); it is restarted on the next call.",
            error_type="unavailable",
            retryable=True,
        )

    def _failed(self, reason: str) -> None:
        """Record why, space the next start out, and let the session go (in the background: a
        stdio server gets seconds to exit)."""
        self.state, self.reason = "failed", self.secrets.mask(reason)
        self._failures += 1
        self._not_before = time.monotonic() + restart_delay(self._failures)
        self._let_go()
        log.warning("! mcp %s failed: %s", self.name, self.reason)

    def _let_go(self) -> None:
        """End the session: a ready one closes (stdin first); one still starting is cancelled, which
        the SDK turns into the same shutdown."""
        if self._client is None and self._holder is not None:
            self._holder.cancel()
        self._client = None
        self._stop.set()

    def _keep(self, coro: Any) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        """Open the session, publish it, and keep it open until stopped."""
        stop = self._stop
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    Client(await self._transport(stack), client_info=Implementation(name="vaultbot", version="0.1"))
                )
                tools = await _list_tools(client)
                if ready.done():  # start() gave up waiting
                    return
                listing = offer(self.name, tools, self.config.tools)
                for warning in listing.warnings:
                    log.warning("! mcp %s", warning)
                self.listing, self._client = listing, client
                self._on_change()
                ready.set_result(None)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.info("mcp %s session ended: %s", self.name, self.secrets.mask(_leaf(exc)))

    async def _transport(self, stack: AsyncExitStack) -> Any:
        config = self.config
        if config.url is not None:
            headers = {k: v.get_secret_value() for k, v in config.headers.items()}
            # Reads are bounded by each call's own timeout: the server's event stream stays open between calls.
            timeout = httpx2.Timeout(config.timeout, read=None)
            hooks = {"response": [self._http_status]}
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks)
            )
            return streamable_http_client(config.url, http_client=http)
        assert config.command is not None
        params = StdioServerParameters(
            command=sys.executable,
            # -I -S: the leash needs nothing but the standard library, and starts in milliseconds.
            args=["-I", "-S", str(LEASH), str(os.getpid()), config.command, *config.args],
            env={k: v.get_secret_value() for k, v in config.env.items()},
        )
        return stdio_client(params, errlog=await self._stderr_pipe(stack))

    async def _http_status(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            url = response.request.url
            self._said += f"\nHTTP {response.status_code} from {url.scheme}://{url.host}:{url.port or ''}{url.path}"
            self._said = self._said[-STDERR_KEPT:]

    async def _stderr_pipe(self, stack: AsyncExitStack) -> TextIO:
        """A pipe for the server's standard error, read as it comes: the end of it says why a
        server failed (masked), and a chatty server never blocks on a full pipe."""
        read_fd, write_fd = os.pipe()
        writer = os.fdopen(write_fd, "w")
        stack.callback(writer.close)  # the server keeps its own copy
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        pipe, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb"))
        stack.callback(pipe.close)

        async def drain() -> None:
            while chunk := await reader.read(4096):
                self._said = (self._said + chunk.decode(errors="replace"))[-STDERR_KEPT:]

        self._keep(drain())
        return writer

    def _why(self, exc: BaseException) -> str:
        """One line on what went wrong, with the last line the server wrote to standard error or the
        last HTTP error it answered (the SDK keeps neither)."""
        leaf = _leaf(exc)
        last = next((line.strip() for line in reversed(self._said.splitlines()) if line.strip()), "")
        said = f" (it said: {last[:300]})" if last else ""
        return self.secrets.mask(f"{leaf}{said}")


def _leaf(exc: BaseException) -> str:
    """The innermost cause of ``exc``, as a person reads it."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        if exc.code == CONNECTION_CLOSED:
            return "the server closed the connection"
        return f"the server answered with an error ({exc.message})"
    if isinstance(exc, httpx2.TransportError):
        return f"cannot reach the server ({type(exc).__name__})"
    if isinstance(exc, OSError):
        return f"cannot start: {exc.strerror or exc}"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


async def _list_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools
