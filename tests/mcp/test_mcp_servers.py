"""What vaultbot does with a server's tool list and with a server that keeps failing: names and
schemas fixed up for the Messages API, restarts spaced out, a late server's tools offered once it is up."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from mcp.types import Tool as ServerTool

from bot.app import App
from bot.mcp import ServerLink
from bot.mcp.link import restart_delay
from bot.mcp.naming import API_NAME, api_name, offer
from bot.mcp.report import report
from bot.settings import McpServerSettings, Settings
from bot.tools import ToolError
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.mcp_http_server import HttpMcpServer
from tests.helpers import run_inbox
from tests.mcp.conftest import TOKEN, eventually, pids, stdio
from tests.runner.conftest import send

OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}}


def tool(name: str, schema: dict[str, object] | None = None, description: str | None = "Does it.") -> ServerTool:
    return ServerTool(name=name, description=description, input_schema=schema or OBJECT)


def test_long_names_are_shortened_and_stay_apart() -> None:
    long_a, long_b = "a" * 70 + "_one", "a" * 70 + "_two"
    listing = offer("files", [tool(long_a), tool(long_b), tool("ok-name")], None)
    names = [t.name for t in listing.offered]
    assert names[2] == "mcp__files__ok-name"
    assert all(API_NAME.fullmatch(n) for n in names) and len(set(names)) == 3
    assert [t.original for t in listing.offered] == [long_a, long_b, "ok-name"]
    assert len(listing.warnings) == 2 and all("(the API's name rules)" in w for w in listing.warnings)


@pytest.mark.parametrize("name", ["read.file", "odd name", "vault\u202ewrite", "clip_link\n", "", "tool/../x"])
def test_a_name_that_is_not_plain_is_refused_with_a_line_naming_the_server(name: str) -> None:
    listing = offer("weather", [tool(name), tool("forecast")], None)
    assert [t.original for t in listing.offered] == ["forecast"]
    assert listing.warnings == [
        f"weather: the tool {name!r} is refused: its name is not a plain name (A-Z, a-z, 0-9, _ and -)"
    ]


@pytest.mark.parametrize("name", ["vault_write", "clip_link", "Vault_Write", "clip-link", "schedule_message"])
def test_a_name_that_reads_as_a_built_in_tools_is_refused(name: str) -> None:
    listing = offer("weather", [tool(name), tool("forecast")], None)
    assert [t.original for t in listing.offered] == ["forecast"]
    said = f"weather: the tool {name!r} is refused: its name is that of one of vaultbot's own tools"
    assert listing.warnings == [said]


def test_a_name_taken_twice_is_left_out_with_a_warning() -> None:
    long_a = "a" * 70
    listing = offer("files", [tool(long_a), tool(long_a)], None)
    assert [t.original for t in listing.offered] == [long_a]
    assert "is left out: another tool has its name" in listing.warnings[-1]


def test_schemas_are_fixed_up_or_their_tools_left_out() -> None:
    union = {"type": "object", "anyOf": [{"required": ["q"]}, {"required": ["p"]}], "properties": {}}
    untyped = {"properties": {"q": {"type": "string"}}}
    listing = offer("s", [tool("union", union), tool("untyped", untyped), tool("text", {"type": "string"})], None)
    by_name = {t.original: t for t in listing.offered}
    assert "anyOf" not in by_name["union"].schema and by_name["union"].schema["type"] == "object"
    assert union["anyOf"]  # the server's own listing is not changed
    assert by_name["untyped"].schema == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert "text" not in by_name
    assert any("'text' is left out: its input is a 'string'" in w for w in listing.warnings)
    assert any("anyOf removed at the root" in w for w in listing.warnings)


def test_the_allowlist_limits_the_tools_and_names_what_the_server_lacks() -> None:
    listing = offer("s", [tool("a"), tool("b", description=None)], ["b", "c"])
    assert [(t.original, t.description) for t in listing.offered] == [("b", "The tool b of the MCP server s.")]
    assert listing.warnings == ["s: offers no tool 'c' (named in tools)"]
    assert len(api_name("s" * 32, "t" * 64)) == 64


def test_restarts_are_spaced_out_after_the_first() -> None:
    assert [restart_delay(n) for n in range(1, 9)] == [0, 1, 2, 4, 8, 16, 32, 60]
    assert restart_delay(5000) == 60  # a server down for days: no overflow, still a minute apart


async def test_a_server_that_keeps_failing_is_not_started_again_until_its_delay_has_passed(
    pid_file: Path,
) -> None:
    link = ServerLink("broken", McpServerSettings(**stdio("crash", env={"PID_FILE": str(pid_file)})))
    try:
        assert not await link.start()
        with pytest.raises(ToolError) as second:  # the first failure: tried again at once
            await link.call("echo", {})
        assert len(pids(pid_file)) == 2
        assert second.value.error_type == "unavailable" and second.value.retryable
        assert "fatal: cannot open the database" in str(second.value) and "tried again in 1 s" in str(second.value)
        with pytest.raises(ToolError):  # within the delay: no new process
            await link.call("echo", {})
        assert len(pids(pid_file)) == 2
        await eventually(lambda: link.retry_in() == 0, timeout=5)
        with pytest.raises(ToolError) as fourth:
            await link.call("echo", {})
        assert len(pids(pid_file)) == 3 and "tried again in 2 s" in str(fourth.value)
    finally:
        await link.stop()


async def test_a_server_that_could_not_start_offers_its_tools_once_it_is_up(
    with_servers: Callable[..., Awaitable[App]], fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    app = await with_servers({"late": stdio(env={"READY_FILE": str(ready)})})
    assert app.mcp is not None
    [link] = app.mcp.links
    assert link.state == "failed"
    ready.touch()
    fake_anthropic.enqueue(api.text("No tools yet."), api.tool_use(("mcp__late__echo", {"text": "up"})), api.text("Ok"))
    await send(app, "first")
    await run_inbox(app)
    assert not any(t["name"].startswith("mcp__late__") for t in fake_anthropic.requests[0].body["tools"])
    await eventually(lambda: link.state == "ready", timeout=60)  # started again in the background by that run

    await send(app, "second")
    await run_inbox(app)
    assert any(t["name"] == "mcp__late__echo" for t in fake_anthropic.requests[1].body["tools"])
    assert "up" in str(fake_anthropic.requests[2].body["messages"][-1])


async def test_an_http_server_that_refuses_the_headers_is_named_with_its_status_and_not_the_token(
    http_server: HttpMcpServer,
) -> None:
    settings = Settings(
        _env_file=None,
        mcp={"servers": {"web": {"url": http_server.url, "headers": {"Authorization": "Bearer wrong-token-value"}}}},
    )
    [web] = await report(settings)
    assert not web.ok and web.state == "failed" and web.tools == []
    assert web.reason is not None and "(it said: HTTP 401 from http://127.0.0.1:" in web.reason
    assert "wrong-token-value" not in web.describe()


async def test_an_http_server_gone_mid_session_fails_the_call_as_unavailable(http_server: HttpMcpServer) -> None:
    link = ServerLink("web", McpServerSettings(url=http_server.url, headers={"Authorization": f"Bearer {TOKEN}"}))
    try:
        assert await link.start()
        assert (await link.call("add", {"a": 1, "b": 1})).result["content"][0]["text"] == "2"
        http_server.__exit__(None, None, None)
        with pytest.raises(ToolError) as gone:
            await link.call("add", {"a": 1, "b": 1})
        assert gone.value.error_type == "unavailable" and gone.value.retryable and link.state == "failed"
    finally:
        await link.stop()
