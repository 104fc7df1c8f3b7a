"""Documents in the vault are read in a process of their own, within limits of time and memory, and
never under the search index's lock: a PDF dropped into the vault is read in the background while
searches go on, a page that needs too much memory is skipped without the vault's process growing, a
file too big to read is not read, and closing the vault ends a reading under way."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.pdfs import inflating_pdf, slow_pdf
from tests.fakes.web_server import wait_until
from tests.helpers import peak_memory_mb, reset_peak_memory
from vault import ReadingLimits, Vault

REPORT = ["Quarterly report\nThe marmalade line doubled.", "Outlook\nWe expect more marmalade."]


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Vault]:
    """A vault that checks the disk before every answer and gives a document 2 s, a page 0.5 s."""
    with Vault(tmp_path / "vault", max_staleness=0, reading=ReadingLimits(0.5, 2.0)) as vault:
        yield vault


def test_a_slow_pdf_dropped_into_the_vault_holds_no_search_back_and_is_found_by_the_words_read(
    limited: Vault,
) -> None:
    (limited.root / "Attachments").mkdir()
    # Two pages of text, then 58 that cost pypdf about two seconds of CPU each: two minutes in all.
    (limited.root / "Attachments" / "slow.pdf").write_bytes(slow_pdf(REPORT, 58))
    started = time.monotonic()
    limited.search("marmalade")  # the check of the disk finds the PDF and hands it on
    limited.search("marmalade")
    waited = time.monotonic() - started
    # Before, the first search read all of the PDF under the index's lock, and every other search waited.
    assert waited < 5, f"two searches took {waited:.1f} s"
    assert limited.wait_for_documents(60)
    assert [hit.path for hit in limited.search("doubled")] == ["Attachments/slow.pdf"]
    note = limited.read("Attachments/slow.pdf")
    assert note.content.startswith("--- Page 1 ---\nQuarterly report\nThe marmalade line doubled.\n\n--- Page 2 ---")
    skipped = "--- Page 3 ---\n[Not read: it took more than the 0.5 s of processor time vaultbot allows a page.]"
    assert skipped in note.content
    # Stopped by its 2 s of CPU, or on a machine too busy to give it those, by the clock (13 s).
    assert "(of 60) were not read: reading the document took more than the " in note.content
    assert "\n\n[Left out of slow.pdf: pages 3–" in note.content


def test_a_page_that_needs_more_memory_than_allowed_is_skipped_and_the_vaults_process_does_not_grow(
    tmp_path: Path,
) -> None:
    data = inflating_pdf()  # page 2 inflates to 70 MB of operators
    reset_peak_memory()
    before = peak_memory_mb()
    with Vault(tmp_path / "vault", reading=ReadingLimits(30, 60, memory_mb=160)) as notes:
        (notes.root / "bomb.pdf").write_bytes(data)
        path, read = notes.read_document("bomb.pdf")
    grown = peak_memory_mb() - before
    assert path == "bomb.pdf" and read.status == "ok" and read.pages == 3
    assert read.text == (
        "--- Page 1 ---\nPage one is fine.\n\n"
        "--- Page 2 ---\n[Not read: it needed more than the 160 MB of memory vaultbot allows a document.]\n\n"
        "--- Page 3 ---\nPage three is fine."
    )
    assert read.limits == "page 2 was skipped: it needed more than the 160 MB of memory vaultbot allows a document"
    assert grown < 40, f"reading the PDF grew this process's peak by {grown:.0f} MB"


def test_a_file_larger_than_a_quarter_of_the_memory_limit_is_not_read_and_is_said_to_be_too_big(tmp_path: Path) -> None:
    with Vault(tmp_path / "vault", reading=ReadingLimits(memory_mb=128)) as notes:
        (notes.root / "huge.txt").write_bytes(b"marmalade on toast\n" * 2_000_000)  # 38 MB
        path, read = notes.read_document("huge.txt")
        assert read.status == "limited" and read.text == ""
        assert read.problem == "the file is larger than the 32 MB vaultbot reads"
        assert notes.read("huge.txt").content == (
            "(The text of huge.txt cannot be read: the file is larger than the 32 MB vaultbot reads.)"
        )
        assert [hit.path for hit in notes.search("huge")] == ["huge.txt"]  # found by its name, as before


def processes() -> list[tuple[int, int, int, str, bytes]]:
    """(pid, parent pid, session id, state, command line) of every process this machine shows."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # gone meanwhile
        fields = stat.rsplit(")", 1)[1].split()
        found.append((int(entry.name), int(fields[1]), int(fields[3]), fields[0], cmdline))
    return found


def reading_sessions() -> set[int]:
    """The sessions of the document readers this test process started (the fork server leads each)."""
    return {pid for pid, ppid, _, _, cmd in processes() if ppid == os.getpid() and b"document_process.py" in cmd}


def alive_in(sessions: set[int]) -> set[int]:
    return {pid for pid, _, session, state, _ in processes() if session in sessions and state != "Z"}


def test_closing_the_vault_ends_a_reading_under_way_at_once_and_leaves_no_process(tmp_path: Path) -> None:
    notes = Vault(tmp_path / "vault", reading=ReadingLimits(page_seconds=30, document_seconds=120))
    try:
        (notes.root / "slow.pdf").write_bytes(slow_pdf([], 3, operators=2_000_000))  # 20 s of CPU a page
        notes.sync()
        assert not notes.wait_for_documents(1.0)  # under way in the background
        sessions = reading_sessions()
        assert len(alive_in(sessions)) == 2  # the fork server and the child reading slow.pdf
    finally:
        started = time.monotonic()
        notes.close()
    assert time.monotonic() - started < 10
    # Killed, not left to finish its page (the kernel may take a moment to show it).
    wait_until(lambda: not alive_in(sessions), timeout=5)
