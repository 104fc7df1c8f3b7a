"""How often a question for consent comes up in ordinary use: a pytest plugin that counts the questions
every test's store holds once the test is over (in-process runs and `vaultbot` processes alike).

    .venv/bin/python -m pytest -p bench.questions tests --ignore=tests/consent \
        --deselect tests/web/test_review_consent.py

The project's own scripted conversations are ordinary use; tests/consent attack on purpose and are left
out. It prints each test whose conversations raised a question (a question in ordinary use is a bug) and
the total.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

_asked: dict[str, int] = {}
_stores = 0


def _questions(store: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM consent_questions").fetchone()[0])
        except sqlite3.DatabaseError:  # not vaultbot's store, or one made before questions existed
            return 0


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: Any) -> None:
    """Count the questions in every store under the test's temporary folder."""
    global _stores
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if tmp_path is None:
        return
    for store in Path(tmp_path).rglob("*.db"):
        _stores += 1
        asked = _questions(store)
        if asked:
            _asked[item.nodeid] = _asked.get(item.nodeid, 0) + asked


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many questions the conversations raised, and where."""
    write = terminalreporter.write_line
    write(f"consent questions: {sum(_asked.values())} in {len(_asked)} test(s), over {_stores} store(s)")
    for nodeid, asked in sorted(_asked.items()):
        write(f"  {asked}  {nodeid}")
