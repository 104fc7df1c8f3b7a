"""``vaultbot undo RUN_ID [--dry-run]`` as a person runs it: real ``vaultbot`` subprocesses in capture
mode (``vaultbot chat`` files the notes), a real vault and store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.test_dead_letters_cli import vaultbot as run_vaultbot


def vaultbot(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return run_vaultbot(tmp_path, *args, stdin=stdin, env={"LOGNAME": "ann", "USER": "ann"})


def filed(tmp_path: Path, *lines: str) -> list[str]:
    """File ``lines`` with ``vaultbot chat`` (one run each); returns the run ids, oldest first."""
    chatted = vaultbot(tmp_path, "chat", stdin="".join(f"{line}\n" for line in lines))
    assert chatted.returncode == 0, chatted.stderr
    runs = json.loads(vaultbot(tmp_path, "runs", "--json").stdout)
    return [run["id"] for run in reversed(runs)]


def test_dry_run_says_what_would_happen_and_changes_nothing_then_undo_does_it(tmp_path: Path) -> None:
    [run] = filed(tmp_path, "renew the passport")
    inbox = tmp_path / "data/vault/Inbox"

    dry = vaultbot(tmp_path, "undo", run[:6], "--dry-run")

    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == f"Would undo run {run[:8]}:\n• Inbox/renew the passport.md: would go to .trash\n"
    assert [p.name for p in inbox.iterdir()] == ["renew the passport.md"]

    done = vaultbot(tmp_path, "undo", run)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        f"Undid run {run[:8]}:",
        "• Inbox/renew the passport.md: moved to .trash/Inbox/renew the passport.md",
    ]
    assert lines[2].startswith("`vaultbot undo ") and lines[2].endswith("` puts it back.")
    assert list(inbox.iterdir()) == []
    assert (tmp_path / "data/vault/.trash/Inbox/renew the passport.md").exists()
    [entry] = [e for e in json.loads(vaultbot(tmp_path, "log", "--json").stdout) if e["category"] == "undo"]
    assert entry["summary"] == f"Undid run {run[:8]}: 1 of 1 changes taken back."

    again = vaultbot(tmp_path, "undo", run)
    assert again.returncode == 2
    assert again.stderr.startswith(f"vaultbot: Run {run[:8]} is already undone, by run ")

    redo_id = lines[2].removeprefix("`vaultbot undo ").split("`")[0]
    redone = vaultbot(tmp_path, "undo", redo_id)
    assert redone.returncode == 0, redone.stderr
    assert "• Inbox/renew the passport.md: put back from .trash" in redone.stdout
    assert [p.name for p in inbox.iterdir()] == ["renew the passport.md"]


def test_a_note_changed_since_is_left_and_the_exit_status_is_1(tmp_path: Path) -> None:
    [first, second] = filed(tmp_path, "call the plumber", "buy oat milk")
    note = tmp_path / "data/vault/Inbox/call the plumber.md"
    note.write_text(note.read_text() + "He comes on Tuesday.\n")

    left = vaultbot(tmp_path, "undo", first)

    assert left.returncode == 1, left.stderr
    assert left.stdout.startswith(
        f"Nothing of run {first[:8]} was taken back.\nLeft as it is:\n"
        "• Inbox/call the plumber.md: it was edited since (1 line added, 0 removed: “He comes on Tuesday.”)"
    )
    assert "He comes on Tuesday." in note.read_text()
    assert vaultbot(tmp_path, "undo", second).returncode == 0


def test_a_run_id_that_names_no_run_is_refused_with_status_2(tmp_path: Path) -> None:
    filed(tmp_path, "one note")
    for given, said in [
        ("abc", "'abc' is too short to name a run: give at least 6 characters of its id."),
        ("zzzzzz", "No run has an id starting with 'zzzzzz'."),
        ("../../../etc", "No run has an id starting with '../../../etc'."),
    ]:
        refused = vaultbot(tmp_path, "undo", given)
        assert (refused.returncode, refused.stderr) == (2, f"vaultbot: {said}\n")
    assert not (tmp_path / "data/vault/.trash").exists()


def test_an_undo_that_took_nothing_back_is_not_recorded_and_the_run_stays_undoable(tmp_path: Path) -> None:
    [run] = filed(tmp_path, "call the plumber")
    note = tmp_path / "data/vault/Inbox/call the plumber.md"
    written = note.read_text()
    note.write_text(written + "He comes on Tuesday.\n")

    left = vaultbot(tmp_path, "undo", run)

    assert left.returncode == 1, left.stderr
    assert "puts it back" not in left.stdout
    assert [e for e in json.loads(vaultbot(tmp_path, "log", "--json").stdout) if e["category"] == "undo"] == []

    note.write_text(written)  # the hand edit taken out again
    done = vaultbot(tmp_path, "undo", run)

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Undid run {run[:8]}:\n• Inbox/call the plumber.md: moved to .trash/")
    assert not note.exists()
    redo_id = done.stdout.splitlines()[-1].removeprefix("`vaultbot undo ").split("`")[0]
    redone = vaultbot(tmp_path, "undo", redo_id)
    assert redone.returncode == 0, redone.stderr
    assert note.read_text() == written


def test_a_run_undone_in_part_stays_undoable_and_the_rest_goes_once_the_edit_is_gone(tmp_path: Path) -> None:
    from tests.fakes import anthropic_server as api
    from tests.fakes.anthropic_server import FakeAnthropic

    with FakeAnthropic() as fake:
        fake.enqueue(
            api.tool_use(
                ("vault_write", {"folder": "Inbox", "title": "Plumber", "content": "call the plumber"}),
                ("vault_write", {"folder": "Inbox", "title": "Milk", "content": "buy oat milk"}),
            ),
            api.text("Noted both."),
        )
        env = {"LOGNAME": "ann", "USER": "ann", "ANTHROPIC_API_KEY": "sk-ant-undo", "ANTHROPIC_BASE_URL": fake.base_url}
        chatted = run_vaultbot(tmp_path, "chat", stdin="two things\n", env=env)
    assert chatted.returncode == 0, chatted.stderr
    [run] = [r["id"] for r in json.loads(vaultbot(tmp_path, "runs", "--json").stdout)]
    inbox = tmp_path / "data/vault/Inbox"
    plumber = inbox / "Plumber.md"
    written = plumber.read_text()
    plumber.write_text(written + "He comes on Tuesday.\n")

    partly = vaultbot(tmp_path, "undo", run)
    assert partly.returncode == 1, partly.stderr
    assert "• Inbox/Milk.md: moved to .trash/Inbox/Milk.md" in partly.stdout and "Left as it is:" in partly.stdout

    plumber.write_text(written)
    rest = vaultbot(tmp_path, "undo", run)
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert "• Inbox/Plumber.md: moved to .trash/Inbox/Plumber.md" in rest.stdout and "Milk" not in rest.stdout
    assert list(inbox.iterdir()) == []
    again = vaultbot(tmp_path, "undo", run)
    assert again.returncode == 2 and "is already undone" in again.stderr
