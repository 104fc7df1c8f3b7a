"""MCP servers as a user meets them: real `vaultbot` subprocesses configured through the environment
or config/vaultbot.toml, real stdio servers, SIGTERM and SIGKILL."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import SEVERAL_PROCESSES, StderrLines, subprocess_env
from tests.mcp.conftest import SECRET, alive, pids, stdio, wait_until

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test


def servers_env(servers: dict[str, dict[str, Any]], **more: str) -> dict[str, str]:
    return subprocess_env(VAULTBOT_MCP__SERVERS=json.dumps(servers), **more)


def vaultbot(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().split(") ")[-1].split()[1])


@contextlib.contextmanager
def running(tmp_path: Path, pid_file: Path, fake: FakeAnthropic) -> Iterator[tuple[subprocess.Popen[str], StderrLines]]:
    """`vaultbot run` with one stdio server, once it serves; killed at the end if still running."""
    env = servers_env(
        {"files": stdio(env={"PID_FILE": str(pid_file), "SECRET": SECRET, "HELPER": "1"})},
        ANTHROPIC_API_KEY="sk-ant-test",
        ANTHROPIC_BASE_URL=fake.base_url,
    )
    with subprocess.Popen(
        [sys.executable, "-m", "bot", "-v", "run"], stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env
    ) as process:
        err = StderrLines(process)
        try:
            wait_until(lambda: err.has("worker(s)") or process.poll() is not None, timeout=90)
            assert process.poll() is None, err.text()
            yield process, err
        finally:
            process.kill()
            process.wait(timeout=10)
            err.text()


def test_a_sigkilled_vaultbot_leaves_no_server_process_behind(
    tmp_path: Path, pid_file: Path, fake_anthropic: FakeAnthropic
) -> None:
    with running(tmp_path, pid_file, fake_anthropic) as (process, _):
        server, helper = pids(pid_file)
        # The server, what it started, and what stands between vaultbot and it.
        started = {server, helper, parent_of(server)} - {process.pid}
        assert all(alive(pid) for pid in started)
        process.kill()
        process.wait(timeout=10)
        wait_until(lambda: not any(alive(pid) for pid in started), timeout=10)


def test_a_sigterm_stops_vaultbot_and_its_servers_with_it(
    tmp_path: Path, pid_file: Path, fake_anthropic: FakeAnthropic
) -> None:
    with running(tmp_path, pid_file, fake_anthropic) as (process, err):
        server, helper = pids(pid_file)
        started = {server, helper, parent_of(server)} - {process.pid}
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, err.text()
        assert not any(alive(pid) for pid in started)
        assert SECRET not in err.text()


def test_doctor_lists_each_server_its_state_and_tools_and_says_why_one_failed(tmp_path: Path) -> None:
    env = servers_env(
        {"files": stdio(env={"SECRET": SECRET}, tools=["echo", "odd.name/with spaces"]), "broken": stdio("crash")}
    )
    done = vaultbot(tmp_path, "doctor", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = {line.split(":")[0]: line for line in done.stdout.splitlines()}
    assert lines["ok   mcp files"].startswith("ok   mcp files: stdio, ready, 1 tool(s): mcp__files__echo")
    assert (
        "warnings: files: the tool 'odd.name/with spaces' is refused: its name is not a plain name"
        in lines["ok   mcp files"]
    )
    assert lines["FAIL  mcp broken"] == (
        "FAIL  mcp broken: stdio, failed: the server closed the connection "
        "(it said: fatal: cannot open the database /nowhere)"
    )
    assert SECRET not in done.stdout + done.stderr


def test_mcp_list_shows_the_tool_names_the_model_sees(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "vaultbot.toml").write_text(
        "[mcp.servers.files]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(stdio()['args'][0]))}]\n"
        'tools = ["echo", "pid", "vault_write", "missing"]\n'
        f'env = {{ SECRET = "{SECRET}", WEATHER = "1" }}\n'
    )
    done = vaultbot(tmp_path, "mcp", "list", env=subprocess_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "files (stdio): ready",
        "  mcp__files__echo",
        "  mcp__files__pid",
        "  warning: files: the tool 'vault_write' is refused: its name is that of one of vaultbot's own tools",
        "  warning: files: offers no tool 'missing' (named in tools)",
    ]
    listed = json.loads(vaultbot(tmp_path, "mcp", "list", "--json", env=subprocess_env()).stdout)
    assert listed[0]["server"] == "files" and listed[0]["tools"] == ["mcp__files__echo", "mcp__files__pid"]


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        ({"my files": {"command": "npx"}}, "the server name 'my files' must be 1 to 32 letters, digits or '-'"),
        ({"files": {"command": "npx", "url": "http://127.0.0.1:9/mcp"}}, "give either command"),
        ({"files": {"url": "ftp://example.org"}}, "expected an http(s) URL"),
        ({"files": {"url": "http://127.0.0.1:9/mcp", "env": {"KEY": SECRET}}}, "a url server takes headers"),
    ],
)
def test_a_bad_server_setting_is_one_line_without_its_secrets(
    tmp_path: Path, servers: dict[str, Any], expected: str
) -> None:
    done = vaultbot(tmp_path, "mcp", "list", env=servers_env(servers))
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("vaultbot: ") and expected in line
    assert SECRET not in done.stderr
