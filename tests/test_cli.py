"""The `vaultbot` command as a user runs it: a real subprocess, a real vault folder and database."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import SEVERAL_PROCESSES, StderrLines, ctrl_c_as_at_a_terminal, subprocess_env

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test


def vaultbot(
    tmp_path: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m bot`` in tmp_path with a clean environment (no key unless given)."""
    full_env = subprocess_env(**(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=full_env,
        timeout=60,
    )


def test_piped_chat_without_a_key_files_the_note_and_says_where(tmp_path: Path) -> None:
    done = vaultbot(tmp_path, "chat", stdin="remember to buy oat milk\nand call mum\n")
    assert done.returncode == 0, done.stderr
    note = tmp_path / "data" / "vault" / "Inbox" / "remember to buy oat milk.md"
    assert note.exists()
    assert "remember to buy oat milk" in note.read_text() and note.read_text().startswith("---\n")
    lines = done.stdout.splitlines()
    assert lines[0] == "vaultbot> Saved to Inbox/remember to buy oat milk.md in your vault."
    assert "ANTHROPIC_API_KEY" in lines[1]
    assert "Saved to Inbox/and call mum.md" in done.stdout
    assert done.stderr == ""

    logged = vaultbot(tmp_path, "log", "--json")
    assert logged.returncode == 0, logged.stderr
    entries = json.loads(logged.stdout)
    assert [e["summary"] for e in entries] == [
        "Captured to the inbox: and call mum",
        "Captured to the inbox: remember to buy oat milk",
    ]
    assert {"id", "created_at", "conversation", "category", "summary", "run_id"} <= set(entries[0])

    table = vaultbot(tmp_path, "log")
    assert "remember to buy oat milk" in table.stdout and "summary" in table.stdout


def test_the_same_line_with_a_key_runs_the_tool_loop_and_prints_the_models_reply(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        fake.enqueue(
            api.tool_use(
                ("vault_write", {"folder": "Tasks", "title": "Oat milk", "content": "- [ ] buy oat milk"}),
                ("log_interaction", {"summary": "Added oat milk to tasks", "category": "task"}),
            ),
            api.text("Added to Tasks/Oat milk.md."),
        )
        env = {
            "ANTHROPIC_API_KEY": "sk-ant-cli-secret",
            "ANTHROPIC_BASE_URL": fake.base_url,
            "VAULTBOT_MODEL__SDK_MAX_RETRIES": "0",
            "LOGNAME": "ann",  # the terminal's user names the conversation
            "USER": "ann",
        }
        done = vaultbot(tmp_path, "chat", stdin="remember to buy oat milk\n", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "vaultbot> Added to Tasks/Oat milk.md.\n"
    assert (tmp_path / "data" / "vault" / "Tasks" / "Oat milk.md").exists()

    runs = json.loads(vaultbot(tmp_path, "runs", "--json").stdout)
    assert [(r["status"], r["conversation"]) for r in runs] == [("completed", "terminal:ann")]
    shown = vaultbot(tmp_path, "runs", "show", runs[0]["id"], "--json")
    steps = json.loads(shown.stdout)["steps"]
    assert [s["name"] for s in steps if s["kind"] == "tool"] == ["vault_write", "log_interaction"]
    readable = vaultbot(tmp_path, "runs", "show", runs[0]["id"])
    assert "vault_write" in readable.stdout and "completed" in readable.stdout
    assert "sk-ant-cli-secret" not in done.stdout + done.stderr + shown.stdout


def test_an_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    done = vaultbot(tmp_path, "runs", "show", "nope-nope")
    assert done.returncode == 1 and "no run with id 'nope-nope'" in done.stderr


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"VAULTBOT_BUS__MAX_ATTEMPTS": "lots"}, "VAULTBOT_BUS__MAX_ATTEMPTS"),
        ({"VAULTBOT_TELEGRAM__ALLOWED_USERS": "[1, 2"}, "VAULTBOT_TELEGRAM__ALLOWED_USERS"),
        ({"VAULTBOT_MODEL__MAX_TOOL_CALLS": "0"}, "VAULTBOT_MODEL__MAX_TOOL_CALLS"),
    ],
)
def test_a_bad_setting_is_one_clear_line_and_exit_2(tmp_path: Path, env: dict[str, str], named: str) -> None:
    done = vaultbot(tmp_path, "chat", env=env)
    assert done.returncode == 2
    assert named in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_doctor_says_what_works(tmp_path: Path) -> None:
    done = vaultbot(tmp_path, "doctor", env={"VAULTBOT_TELEGRAM__TOKEN": "123:secret-token"})
    assert "vault" in done.stdout.lower() and "database" in done.stdout.lower()
    assert "capture mode" in done.stdout.lower()
    assert "0 dead-lettered" in done.stdout
    assert "secret-token" not in done.stdout + done.stderr


def chat_with_model(tmp_path: Path, fake: FakeAnthropic, line: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {"ANTHROPIC_API_KEY": "sk-ant-cli", "ANTHROPIC_BASE_URL": fake.base_url, **env}
    return vaultbot(tmp_path, "chat", stdin=line + "\n", env=full_env)


def test_a_tool_that_keeps_failing_is_told_to_the_user_in_one_line_each(tmp_path: Path) -> None:
    inputs = [{"folder": "../outside", "title": f"x{i}", "content": "y"} for i in range(3)]
    escapes = [api.tool_use(("vault_write", escape)) for escape in inputs]
    with FakeAnthropic() as fake:
        fake.enqueue(*escapes, api.text("I can't save there."))
        done = chat_with_model(tmp_path, fake, "save it outside")
    assert done.returncode == 0, done.stderr
    notices = [line for line in done.stdout.splitlines() if line.startswith("vaultbot (notice)> ⚠")]
    assert len(notices) == 3
    assert any("failed 3 times in a row" in n for n in notices)
    assert any("refused by policy" in n for n in notices)
    assert any("keeps failing" in n for n in notices)
    # Notices and replies are printed by two workers, so a notice may come after the reply.
    assert [line for line in done.stdout.splitlines() if line.startswith("vaultbot> ")] == [
        "vaultbot> I can't save there."
    ]
    assert not (tmp_path / "data" / "outside").exists()


def test_a_model_stuck_in_a_loop_is_stopped_with_a_reason(tmp_path: Path) -> None:
    same = ("vault_search", {"query": "milk"})
    with FakeAnthropic() as fake:
        fake.handler = lambda body: api.tool_use(same)
        done = chat_with_model(tmp_path, fake, "find milk")
    assert done.returncode == 0, done.stderr
    assert "I stopped here: vault_search was called with the same input 3 times" in done.stdout
    runs = json.loads(vaultbot(tmp_path, "runs", "--json").stdout)
    assert runs[0]["status"] == "stopped" and "same input" in runs[0]["reason"]


def test_capture_into_the_daily_note(tmp_path: Path) -> None:
    done = vaultbot(
        tmp_path, "chat", stdin="first thought\nsecond thought\n", env={"VAULTBOT_VAULT__CAPTURE_TO": "daily"}
    )
    assert done.returncode == 0, done.stderr
    [note] = list((tmp_path / "data" / "vault" / "Daily").glob("*.md"))
    text = note.read_text()
    assert "first thought" in text and "second thought" in text
    assert done.stdout.count(f"Saved to Daily/{note.name} in your vault.") == 2


def test_chat_piped_into_a_reader_that_leaves_ends_quietly_and_keeps_the_unprinted_reply(tmp_path: Path) -> None:
    # `vaultbot chat < notes.txt | head -1`: once head has its line, the next reply meets a closed pipe.
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=subprocess_env(),
    )
    try:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        process.stdin.write(b"first thought\n")
        process.stdin.flush()
        assert process.stdout.readline() == b"vaultbot> Saved to Inbox/first thought.md in your vault.\n"
        process.stdout.close()  # head exits
        # The rest of the file, once head has gone: sent before, its replies could all fit in the pipe
        # before head left, on a busy machine, and no reply would meet the closed pipe.
        process.stdin.write(b"second thought\nthird thought\n")
        process.stdin.close()
        # Like a Unix filter whose reader left: at once, the status of SIGPIPE, no traceback, nothing retried.
        assert process.wait(timeout=30) == 141
        assert process.stderr.read() == b""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    vault = tmp_path / "data" / "vault" / "Inbox"
    assert (vault / "second thought.md").exists()
    assert not (vault / "third thought.md").exists()  # never read: it stays the caller's to send again

    # The reply that could not be printed is not lost: the next chat prints it first.
    again = vaultbot(tmp_path, "chat", stdin="fourth thought\n")
    assert again.returncode == 0, again.stderr
    replies = [line for line in again.stdout.splitlines() if line.startswith("vaultbot> ")]
    assert replies == [
        "vaultbot> Saved to Inbox/second thought.md in your vault.",
        "vaultbot> Saved to Inbox/fourth thought.md in your vault.",
    ]


def test_ctrl_c_ends_chat_at_once_even_while_waiting_for_input(tmp_path: Path) -> None:
    # At a terminal (a pty here) a blocked read of standard input must not keep the program alive.
    master, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "chat"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=tmp_path,
        env=subprocess_env(),
        preexec_fn=ctrl_c_as_at_a_terminal,
    )
    try:
        shown = b""
        deadline = time.monotonic() + 30
        while b"you> " not in shown:  # the prompt: it is now waiting for a line
            assert time.monotonic() < deadline, shown
            if select.select([master], [], [], 1)[0]:
                shown += os.read(master, 1024)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
        os.close(terminal)


def test_ctrl_c_in_chat_prints_the_reply_in_flight_before_exiting(tmp_path: Path) -> None:
    answer = api.Held(api.text("Hello, Ann."))  # the turn is in flight while Ctrl-C arrives

    with FakeAnthropic() as fake:
        fake.handler = answer
        env = subprocess_env(ANTHROPIC_API_KEY="sk-ant-cli", ANTHROPIC_BASE_URL=fake.base_url)
        process = subprocess.Popen(
            [sys.executable, "-m", "bot", "--verbose", "chat"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=ctrl_c_as_at_a_terminal,
        )
        try:
            log = StderrLines(process)
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write("hi\n")
            process.stdin.flush()  # and left open: chat is still reading when Ctrl-C comes
            assert answer.asked.wait(30), "vaultbot chat never called the model"
            process.send_signal(signal.SIGINT)
            deadline = time.monotonic() + 30
            while not log.has("stopping"):
                assert time.monotonic() < deadline and process.poll() is None, "chat did not begin to stop"
                time.sleep(0.02)
            answer.release()
            printed = process.stdout.read()
            assert process.wait(timeout=30) == 130
        finally:
            answer.release()
            if process.poll() is None:
                process.kill()
                process.wait()
            errors = log.text()  # read to the end before the pipe closes
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream:
                    stream.close()
    assert printed == "vaultbot> Hello, Ann.\n"
    assert "Traceback" not in errors
    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "vaultbot.db")) as conn:
        statuses = [row[0] for row in conn.execute("SELECT status FROM bus_messages ORDER BY id")]
    assert statuses == ["done", "done"]  # the message and its reply: nothing left for the next start


async def seed_history(tmp_path: Path) -> None:
    """Five log entries and runs, one a day for the last five days (newest: one hour ago), in the
    database `vaultbot` opens in tmp_path."""
    from bot.db import Database, to_iso
    from bot.store import Store

    db = await Database.open(tmp_path / "data" / "vaultbot.db")
    try:
        store = Store(db)
        for days in reversed(range(5)):  # oldest first, as they happened
            when = to_iso(datetime.now(UTC) - timedelta(days=days, hours=1))
            entry = await store.add_interaction(
                conversation="terminal:ann", category="note", summary=f"entry {days}d old", run_id=None
            )
            await store.start_run(f"run-{days}d", conversation="terminal:ann", inbound_id=None, model="m", mode="model")
            # The store stamps the present; these rows stand for what happened earlier.
            await db.execute("UPDATE interactions SET created_at = ? WHERE id = ?", (when, entry))
            await db.execute("UPDATE runs SET started_at = ? WHERE id = ?", (when, f"run-{days}d"))
    finally:
        await db.close()


def as_json(tmp_path: Path, *args: str) -> list[dict[str, object]]:
    done = vaultbot(tmp_path, *args, "--json")
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, object]] = json.loads(done.stdout)
    return rows


async def test_log_limit_and_since_pick_the_newest_entries(tmp_path: Path) -> None:
    await seed_history(tmp_path)
    summaries = [e["summary"] for e in as_json(tmp_path, "log")]
    assert summaries == [f"entry {d}d old" for d in range(5)]  # newest first
    assert [e["summary"] for e in as_json(tmp_path, "log", "--limit", "2")] == ["entry 0d old", "entry 1d old"]
    assert [e["summary"] for e in as_json(tmp_path, "log", "--since", "2d")] == ["entry 0d old", "entry 1d old"]
    since = (datetime.now(UTC) - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S")
    assert len(as_json(tmp_path, "log", "--since", since)) == 3
    assert [e["summary"] for e in as_json(tmp_path, "log", "--since", "7d", "--limit", "1")] == ["entry 0d old"]
    bad = vaultbot(tmp_path, "log", "--since", "last tuesday")
    assert bad.returncode == 2 and "--since" in bad.stderr and "Traceback" not in bad.stderr


async def test_runs_since_picks_the_recent_runs(tmp_path: Path) -> None:
    await seed_history(tmp_path)
    assert [r["id"] for r in as_json(tmp_path, "runs")] == [f"run-{d}d" for d in range(5)]
    assert [r["id"] for r in as_json(tmp_path, "runs", "--since", "36h")] == ["run-0d", "run-1d"]
    assert [r["id"] for r in as_json(tmp_path, "runs", "--since", "3d", "--limit", "1")] == ["run-0d"]


def test_capture_into_a_daily_note_named_by_the_pattern_and_folder(tmp_path: Path) -> None:
    pattern = "Journal %Y, week %V"
    before = datetime.now().astimezone().strftime(pattern)
    env = {
        "VAULTBOT_VAULT__CAPTURE_TO": "daily",
        "VAULTBOT_VAULT__DAILY_FOLDER": "Diary",
        "VAULTBOT_VAULT__DAILY_PATTERN": pattern,
    }
    done = vaultbot(tmp_path, "chat", stdin="a thought\n", env=env)
    after = datetime.now().astimezone().strftime(pattern)
    assert done.returncode == 0, done.stderr
    [note] = list((tmp_path / "data" / "vault" / "Diary").glob("*.md"))
    assert note.stem in {before, after}  # the week may turn while the command runs
    assert "a thought" in note.read_text()
    assert f"Saved to Diary/{note.name} in your vault." in done.stdout


async def test_ctrl_c_stops_run_gracefully_and_loses_nothing_in_flight(tmp_path: Path) -> None:
    from bot.bus import INBOUND, Bus, InboundMessage, Sender
    from bot.db import Database

    db = await Database.open(tmp_path / "data" / "vaultbot.db")
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="hi")
    await Bus(db).publish(INBOUND, message, conversation="terminal:ann")
    await db.close()
    answer = api.Held(api.text("Hello."))  # the turn is in flight while Ctrl-C arrives

    with FakeAnthropic() as fake:
        fake.handler = answer
        env = subprocess_env(ANTHROPIC_API_KEY="sk-ant-cli", ANTHROPIC_BASE_URL=fake.base_url)
        process = subprocess.Popen(
            [sys.executable, "-m", "bot", "run"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
        )
        try:
            assert answer.asked.wait(30), "vaultbot run never called the model"
            process.send_signal(signal.SIGINT)
            answer.release()
            assert process.wait(timeout=30) == 0
        finally:
            answer.release()
            if process.poll() is None:
                process.kill()
                process.wait()
            errors = process.stderr.read() if process.stderr else ""
            if process.stderr:
                process.stderr.close()
    assert "Traceback" not in errors
    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "vaultbot.db")) as conn:
        rows = conn.execute("SELECT topic, status, payload FROM bus_messages ORDER BY id").fetchall()
        runs = [row[0] for row in conn.execute("SELECT status FROM runs")]
    [(_, status, _)] = [row for row in rows if row[0] == INBOUND]
    # In-flight work finishes (its reply queued) or is handed back for the next start; never lost.
    if status == "done":
        assert [json.loads(p)["text"] for topic, _, p in rows if topic != INBOUND] == ["Hello."]
        assert runs == ["completed"]
    else:
        assert status == "pending"


def test_runs_and_log_show_the_latest_20_as_the_readme_says_and_limit_shows_more(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for command in ("log", "runs"):
        [line] = [line for line in readme.splitlines() if re.match(rf"vaultbot {command} +#", line)]
        assert "the latest 20" in line and "--limit" in line and "every" not in line
    done = vaultbot(tmp_path, "chat", stdin="".join(f"thought {n}\n" for n in range(23)))
    assert done.returncode == 0, done.stderr
    assert len(as_json(tmp_path, "runs")) == 20
    assert len(as_json(tmp_path, "log")) == 20
    assert len(as_json(tmp_path, "runs", "--limit", "500")) == 23
    assert len(as_json(tmp_path, "log", "--limit", "500")) == 23
    refused = vaultbot(tmp_path, "runs", "--limit", "0")
    assert refused.returncode == 2 and "--limit" in refused.stderr and "Traceback" not in refused.stderr


def test_version_and_help_answer_without_loading_settings(tmp_path: Path) -> None:
    from importlib.metadata import version

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "vaultbot.toml").write_text("not toml at all [")  # settings are not read for these
    shown = vaultbot(tmp_path, "--version")
    assert (shown.returncode, shown.stdout) == (0, f"vaultbot {version('vaultbot')}\n"), shown.stderr
    # A subcommand's help too: it is what the person whose settings are wrong reaches for.
    for args in (["-h"], ["run", "-h"], ["undo", "-h"], ["runs", "show", "--help"]):
        helped = vaultbot(tmp_path, *args)
        assert helped.returncode == 0, helped.stderr
        assert helped.stdout.startswith("Usage: ") and "-h, --help" in helped.stdout
    # Anything else reads them, and says what is wrong.
    refused = vaultbot(tmp_path, "runs", "show", "--", "-h")
    assert refused.returncode == 2 and "vaultbot.toml" in refused.stderr, refused.stderr


def test_assistant_chat_at_a_terminal_shows_its_banner_and_prompt_before_the_app_is_open(tmp_path: Path) -> None:
    # An MCP server that never starts holds the app's opening for an hour: the prompt must not wait for it.
    never = json.dumps({"slow": {"command": sys.executable, "args": ["-c", "import time; time.sleep(3600)"],
                                 "start_timeout": 3600}})
    master, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "chat"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=tmp_path,
        env=subprocess_env(ANTHROPIC_API_KEY="sk-ant-banner", VAULTBOT_MCP__SERVERS=never),
    )
    try:
        shown = b""
        deadline = time.monotonic() + 30
        while b"you> " not in shown:
            assert time.monotonic() < deadline and process.poll() is None, shown
            if select.select([master], [], [], 1)[0]:
                shown += os.read(master, 1024)
        banner = shown.decode().split("you> ")[0]
        assert "Assistant mode with claude-sonnet-5: notes go to the vault at data/vault." in banner
        # The data folder is relative, so where the chat starts decides it: said at start.
        assert f"Those folders follow the current one ({tmp_path.resolve()})" in banner.replace("\r\n", "")
    finally:
        process.kill()
        process.wait()
        os.close(master)
        os.close(terminal)
