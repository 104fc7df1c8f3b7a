"""Every time a person reads is in their zone (VAULTBOT_TIMEZONE) and says which zone it is:
`vaultbot log`, `runs`, `runs show`, and the chat's /log and /status, each on a real `vaultbot`
subprocess over a database seeded with fixed instants in winter (CET) and summer (CEST)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.helpers import SEVERAL_PROCESSES
from tests.test_cli import vaultbot

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test

BERLIN = {"VAULTBOT_TIMEZONE": "Europe/Berlin"}
WINTER = datetime(2026, 1, 15, 12, 31, 5, tzinfo=UTC)  # 13:31:05 CET
SUMMER = datetime(2026, 7, 15, 12, 31, 5, tzinfo=UTC)  # 14:31:05 CEST
WINTER_RUN = "a1b2c3d4" + "0" * 24
SUMMER_RUN = "e5f6a7b8" + "0" * 24


async def seed(tmp_path: Path) -> None:
    """A log entry and a run at each of WINTER and SUMMER, in the database `vaultbot` opens in tmp_path."""
    from bot.db import Database, to_iso
    from bot.store import Store

    db = await Database.open(tmp_path / "data" / "vaultbot.db")
    try:
        store = Store(db)
        for run_id, when, season in ((WINTER_RUN, WINTER, "winter"), (SUMMER_RUN, SUMMER, "summer")):
            entry = await store.add_interaction(
                conversation="terminal:ann", category="note", summary=f"{season} entry", run_id=run_id
            )
            await store.start_run(run_id, conversation="terminal:ann", inbound_id=None, model="m", mode="model")
            # The store stamps the present; these rows stand for what happened then.
            await db.execute("UPDATE interactions SET created_at = ? WHERE id = ?", (to_iso(when), entry))
            await db.execute("UPDATE runs SET started_at = ? WHERE id = ?", (to_iso(when), run_id))
    finally:
        await db.close()


async def test_log_runs_and_runs_show_print_the_users_zone_and_say_so(tmp_path: Path) -> None:
    await seed(tmp_path)

    log = vaultbot(tmp_path, "log", env=BERLIN)
    assert log.returncode == 0, log.stderr
    assert "2026-01-15 13:31:05 CET" in log.stdout and "2026-07-15 14:31:05 CEST" in log.stdout

    runs = vaultbot(tmp_path, "runs", env=BERLIN)
    assert "2026-01-15 13:31:05 CET" in runs.stdout and "2026-07-15 14:31:05 CEST" in runs.stdout

    shown = vaultbot(tmp_path, "runs", "show", SUMMER_RUN, env=BERLIN)
    assert "started 2026-07-15 14:31:05 CEST" in shown.stdout, shown.stdout + shown.stderr

    elsewhere = vaultbot(tmp_path, "log", env={"VAULTBOT_TIMEZONE": "America/New_York"})
    assert "2026-01-15 07:31:05 EST" in elsewhere.stdout and "2026-07-15 08:31:05 EDT" in elsewhere.stdout

    # The machine format is unchanged: ISO 8601 in UTC.
    entries = json.loads(vaultbot(tmp_path, "log", "--json", env=BERLIN).stdout)
    assert [datetime.fromisoformat(e["created_at"]) for e in entries] == [SUMMER, WINTER]
    runs = json.loads(vaultbot(tmp_path, "runs", "--json", env=BERLIN).stdout)
    assert [datetime.fromisoformat(r["started_at"]) for r in runs] == [SUMMER, WINTER]


async def test_chat_log_and_status_print_the_users_zone_and_say_so(tmp_path: Path) -> None:
    await seed(tmp_path)
    status = vaultbot(tmp_path, "chat", stdin="/status\n", env=BERLIN)
    # /status reports the run before its own: the summer one.
    assert "Last run: running at 2026-07-15 14:31 CEST." in status.stdout, status.stdout + status.stderr
    log = vaultbot(tmp_path, "chat", stdin="/log\n", env=BERLIN)
    assert "• 2026-07-15 14:31 CEST [note] summer entry" in log.stdout
    assert "• 2026-01-15 13:31 CET [note] winter entry" in log.stdout
