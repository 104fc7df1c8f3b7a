"""How often a question for consent comes up in ordinary use: a pytest plugin that counts the questions
every test's store holds once the test is over (in-process runs and `vaultbot` processes alike).

    .venv/bin/python -m pytest -p bench.questions -n 4 tests --ignore=tests/consent \
        --deselect tests/web/test_review_consent.py

The project's own scripted conversations are ordinary use; tests/consent attack on purpose and are left
out. It prints each test whose conversations raised a question (a question in ordinary use is a bug) and
the total. Works with pytest-xdist: each worker appends what it counted to one file the run shares.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest

# One file per run, named by the controlling process (workers inherit it through the environment).
_LOG = "VAULTBOT_BENCH_QUESTIONS"


def pytest_configure(config: pytest.Config) -> None:
    """Name the run's tally file (once, in the controller) and start it empty."""
    if _LOG not in os.environ:
        tally = Path(tempfile.gettempdir()) / f"vaultbot-questions-{os.getpid()}.txt"
        tally.write_text("")
        os.environ[_LOG] = str(tally)


def _questions(store: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM consent_questions").fetchone()[0])
        except sqlite3.DatabaseError:  # not vaultbot's store, or one made before questions existed
            return 0


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: Any) -> None:
    """Count the questions in every store under the test's temporary folder."""
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if tmp_path is None:
        return
    stores = list(Path(tmp_path).rglob("*.db"))
    asked = sum(_questions(store) for store in stores)
    with open(os.environ[_LOG], "a") as tally:
        tally.write(f"{len(stores)} {asked} {item.nodeid}\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many questions the conversations raised, and where."""
    lines = [line.split(" ", 2) for line in Path(os.environ[_LOG]).read_text().splitlines()]
    stores = sum(int(n) for n, _, _ in lines)
    asked = [(int(a), nodeid) for _, a, nodeid in lines if int(a)]
    write = terminalreporter.write_line
    write(f"consent questions: {sum(a for a, _ in asked)} in {len(asked)} test(s), over {stores} store(s)")
    for count, nodeid in sorted(asked, key=lambda x: x[1]):
        write(f"  {count}  {nodeid}")
