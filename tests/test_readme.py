"""The README is the contract with a new user: its quick start stays true, and it stays a front door (short,
linked to the pages in docs/, which link back, and no changelog: history lives in git)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def quick_start() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_the_quick_start_is_two_commands_one_chats_one_tests() -> None:
    chat, tests = quick_start()[:2]
    assert chat.endswith("vaultbot chat") and "python3 -m venv" in chat
    assert tests == "scripts/test"
    # The one test command sets everything up: the browser the review page's tests drive, the
    # virtualenv, then every test.
    script = (ROOT / "scripts" / "test").read_text()
    assert "missing+=(chromium)" in script and 'apt-get install -y -qq "${missing[@]}"' in script
    assert "python3 -m venv .venv" in script and "pip install -q -e '.[test]'" in script and "pytest" in script


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert quick_start()[1] in ci


FRONT_DOOR_LINES = 300
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A commit hash (seven or more hex digits, letters and digits mixed) or an issue number: history, which
# belongs in git, not in the pages a user reads.
HISTORY = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b|\bissues? #?\d+|#\d+\b", re.IGNORECASE)


def anchors(page: Path) -> set[str]:
    """The #fragments a page's headings answer to, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_the_readme_is_a_front_door_of_at_most_300_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= FRONT_DOOR_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.is_file() or (fragment and fragment not in anchors(linked)):
            broken.append(target)
    assert broken == []


def test_the_readme_links_to_every_page_in_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [page.name for page in PAGES[1:] if f"](docs/{page.name})" not in readme] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_commit_hashes_or_issue_numbers(page: Path) -> None:
    assert HISTORY.findall(page.read_text(encoding="utf-8")) == []


async def test_the_store_queries_the_docs_give_run_on_a_real_store(tmp_path: Path) -> None:
    from bot.db import Database

    db = await Database.open(tmp_path / "vaultbot.db")  # migrated, as vaultbot leaves it
    try:
        for page in sorted((ROOT / "docs").glob("*.md")):
            for query in re.findall(r"`sqlite3 \S+ '([^']+)'`", page.read_text()):
                await db.fetchall(query)  # a table or column the store does not have raises here
    finally:
        await db.close()
