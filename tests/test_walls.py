"""The house rules as code: the walls of DESIGN.md ("The house") are import-linter contracts and every
import is declared (deptry), both configured in pyproject.toml and run here, so a crossing fails the suite.

The tools run as the developer runs them (``lint-imports``, ``deptry .`` from the test extra), and their own
report is the failure message. Each check is also shown to fail on a copy of the code with a crossing in it:
a misconfigured check that passes everything would pass here too otherwise.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, subprocess_env

BIN = Path(sys.executable).parent


def run(tool: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``tool`` from this interpreter's environment, on the code in ``cwd`` (not the installed copy)."""
    return subprocess.run(
        [str(BIN / tool), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=subprocess_env(PYTHONPATH=str(cwd)),
        timeout=120,
    )


def copy_of_the_code(tmp_path: Path) -> Path:
    """The packages and their configuration, to break on purpose."""
    for folder in ("bot", "vault"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def add_line(module: Path, line: str) -> None:
    module.write_text(module.read_text() + f"\n{line}\n")


def long_functions(package: Path, most: int) -> list[str]:
    """The functions in ``package`` longer than ``most`` lines (signature, docstring and body), as
    ``path:line name (lines)``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > most:
                    found.append(f"{path.relative_to(package.parent)}:{node.lineno} {node.name} ({lines})")
    return found


def test_no_function_of_the_runner_is_longer_than_a_screen() -> None:
    # A message's walk through the runner reads one short function at a time; a long one gets split.
    assert long_functions(ROOT / "bot" / "runner", 60) == []


def test_a_function_over_a_screen_is_named_with_its_place_and_length(tmp_path: Path) -> None:
    runner = tmp_path / "runner"
    runner.mkdir()
    body = "".join(f"    x{n} = {n}\n" for n in range(60))
    (runner / "long.py").write_text(f"def short():\n    pass\n\n\nasync def walk():\n{body}")
    assert long_functions(runner, 60) == ["runner/long.py:5 walk (61)"]


def test_the_walls_of_the_house_hold() -> None:
    done = run("lint-imports", "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_a_channel_importing_the_runner_and_the_vault_importing_the_bot_fail_the_walls(tmp_path: Path) -> None:
    code = copy_of_the_code(tmp_path)
    add_line(code / "bot" / "channels" / "telegram" / "access.py", "from bot.runner import CommandRunner")
    add_line(code / "vault" / "errors.py", "import bot.settings")
    done = run("lint-imports", "--no-cache", cwd=code)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Channels never import the runner: they publish to and consume from the bus BROKEN" in done.stdout
    assert "bot.channels.telegram.access -> bot.runner" in done.stdout
    assert "vault knows nothing of bots, models, buses or Telegram BROKEN" in done.stdout
    assert "vault.errors -> bot.settings" in done.stdout


def test_a_channel_importing_another_fails_the_walls(tmp_path: Path) -> None:
    code = copy_of_the_code(tmp_path)
    add_line(code / "bot" / "channels" / "email" / "sender.py", "from bot.channels.telegram import render")
    add_line(code / "bot" / "channels" / "matrix" / "__init__.py", "from bot.channels.email import CHANNEL")
    done = run("lint-imports", "--no-cache", cwd=code)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "No channel imports another: they share only the channel core BROKEN" in done.stdout
    assert "bot.channels.email.sender -> bot.channels.telegram" in done.stdout
    assert "bot.channels.matrix -> bot.channels.email" in done.stdout
    assert "Channels never import the runner: they publish to and consume from the bus KEPT" in done.stdout


def test_every_package_the_code_imports_is_declared_and_every_dependency_used() -> None:
    done = run("deptry", ".", "--no-ansi")
    assert done.returncode == 0, done.stdout + done.stderr


def test_tests_benchmarks_and_scripts_import_only_declared_packages() -> None:
    # The development code may use the extras (DEP004) and need not use every dependency (DEP002), but
    # it may not lean on a package that is undeclared or only another package's dependency.
    done = run(
        "deptry", ".", "--no-ansi", "--exclude", r"\.venv.*|\.git|bot|vault|build|mutants", "--ignore", "DEP002,DEP004"
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_import_of_what_only_another_package_brings_fails_the_dependency_check(tmp_path: Path) -> None:
    code = copy_of_the_code(tmp_path)
    # h11 comes with httpx (through httpcore) and uvicorn; the project does not declare it.
    add_line(code / "bot" / "clock.py", "import h11")
    done = run("deptry", ".", "--no-ansi", cwd=code)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "bot/clock.py:" in done.stderr
    assert "DEP003 'h11' imported but it is a transitive dependency" in done.stderr
