"""MCP servers for the tests: the SDK's own server classes, on stdio as subprocesses
(tests/fakes/mcp_stdio_server.py) and over streamable HTTP in a thread (tests/fakes/mcp_http_server.py)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.mcp_http_server import HttpMcpServer

STDIO_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_stdio_server.py"
SECRET = "hunter2-the-env-secret"
TOKEN = "tok-the-header-secret"
# Starting a Python MCP server takes 1-2 s, longer on a loaded machine.
START = 60.0


def stdio(mode: str = "serve", **config: Any) -> dict[str, Any]:
    """The settings of a stdio test server. Trusted unless told otherwise: these tests are of MCP's own
    workings, where a run reads a server's result and calls again; tests/consent asks about the others."""
    return {
        "command": sys.executable,
        "args": [str(STDIO_SERVER), mode],
        "start_timeout": START,
        "trusted": True,
        **config,
    }


@pytest.fixture
def http_server() -> Iterator[HttpMcpServer]:
    with HttpMcpServer(TOKEN) as server:
        yield server


@pytest.fixture
def pid_file(tmp_path: Path) -> Path:
    """Every stdio test server started with ``env={"PID_FILE": …}`` appends its process id here."""
    return tmp_path / "server-pids"


def pids(path: Path) -> list[int]:
    """The process ids written to ``path`` so far."""
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or between it and the read
        return False


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait for ``condition``, polling, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


async def eventually(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait for ``condition`` while the event loop runs on, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


@pytest.fixture
def with_servers(
    make_app: Callable[..., Awaitable[App]], fake_anthropic: FakeAnthropic
) -> Callable[..., Awaitable[App]]:
    """An app on the fake Messages API with these MCP servers (name → settings)."""

    async def build(servers: dict[str, dict[str, Any]], **overrides: Any) -> App:
        return await make_app(
            anthropic_api_key="sk-ant-test-secret",
            anthropic_base_url=fake_anthropic.base_url,
            model={"name": "claude-test", "sdk_max_retries": 0},
            mcp={"servers": servers},
            **overrides,
        )

    return build


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the last message of a request to the Messages API."""
    return [b for b in body["messages"][-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
