"""`vaultbot runs show` takes the short id people see (the runs table, the review page): any unique
prefix of 6 or more characters; an ambiguous one lists the runs it could mean."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli import vaultbot

RUNS = ("67d0820a" + "1" * 24, "67d0820b" + "2" * 24, "9f3e11c0" + "3" * 24)


async def seed(tmp_path: Path, runs: tuple[str, ...] = RUNS) -> None:
    from bot.db import Database
    from bot.store import Store

    db = await Database.open(tmp_path / "data" / "vaultbot.db")
    try:
        for run_id in runs:
            await Store(db).start_run(run_id, conversation="terminal:ann", inbound_id=None, model="m", mode="model")
    finally:
        await db.close()


async def test_the_short_id_the_runs_table_shows_is_one_runs_show_takes(tmp_path: Path) -> None:
    await seed(tmp_path)
    table = vaultbot(tmp_path, "runs")
    assert "9f3e11c0 " in table.stdout and RUNS[2] not in table.stdout  # short, as on the review page
    shown = vaultbot(tmp_path, "runs", "show", "9f3e11c0")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"run {RUNS[2]}  running")
    assert vaultbot(tmp_path, "runs", "show", "9F3E11").stdout.startswith(f"run {RUNS[2]}")
    assert vaultbot(tmp_path, "runs", "show", RUNS[0]).stdout.startswith(f"run {RUNS[0]}")


async def test_a_short_id_that_reads_as_a_number_is_shown_as_it_is(tmp_path: Path) -> None:
    # Hex ids are digits and a-f: one in a few hundred starts with digits, an "e" and digits. A
    # table of such ids alone (a first run) printed 4.74759e+14, which names no run.
    run_id = "474759e9" + "4" * 24
    await seed(tmp_path, (run_id,))
    table = vaultbot(tmp_path, "runs")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[2].split()[0] == "474759e9"
    assert vaultbot(tmp_path, "runs", "show", "474759e9").stdout.startswith(f"run {run_id}")


async def test_an_ambiguous_prefix_lists_the_runs_it_could_mean(tmp_path: Path) -> None:
    await seed(tmp_path)
    done = vaultbot(tmp_path, "runs", "show", "67d0820")
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == "vaultbot: '67d0820' is the start of 2 run ids; give more characters:"
    assert [line.split()[0] for line in lines[1:]] == [RUNS[0], RUNS[1]]
    assert "Traceback" not in done.stderr


async def test_a_prefix_under_six_characters_or_naming_nothing_is_a_clear_error(tmp_path: Path) -> None:
    await seed(tmp_path)
    short = vaultbot(tmp_path, "runs", "show", "9f3e1")
    assert short.returncode == 1
    assert short.stderr == (
        "vaultbot: '9f3e1' is too short to name a run: give at least 6 characters of its id (see `vaultbot runs`).\n"
    )
    unknown = vaultbot(tmp_path, "runs", "show", "abcdef")
    assert unknown.returncode == 1
    assert unknown.stderr == "vaultbot: no run with id 'abcdef' (see `vaultbot runs`).\n"
