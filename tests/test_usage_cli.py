"""What the model cost, as a user reads it: `vaultbot usage`, `runs`, `runs show` and `doctor`
after a real chat through the `anthropic` SDK and a fake Messages API that reports usage."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result

from bot.cli import cli
from bot.db import Database
from bot.store import CallUsage, Store
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import Canned, FakeAnthropic
from tests.helpers import SEVERAL_PROCESSES
from tests.test_cli import vaultbot

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test

ZONE = "Pacific/Kiritimati"  # UTC+14: "today" there is rarely today in UTC


def reported(canned: Canned, model: str, **usage: int) -> Canned:
    """``canned`` as if ``model`` had answered it with this usage."""
    body = json.loads(canned.body)
    body["model"] = model
    body["usage"] = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        **usage,
    }
    return Canned(canned.status, json.dumps(body).encode(), canned.headers)


def chat(tmp_path: Path, model: str, answered_by: str | None = None, line: str = "remember the dentist") -> None:
    """One chat turn asking for ``model``; the fake API says ``answered_by`` (default: the same) answered."""
    answered = answered_by or model
    with FakeAnthropic() as fake:
        write = api.tool_use(("vault_write", {"folder": "Notes", "title": "Dentist", "content": "friday"}))
        fake.enqueue(
            reported(write, answered, input_tokens=1000, output_tokens=200, cache_creation_input_tokens=2000),
            reported(api.text("Noted."), answered, input_tokens=50, output_tokens=30, cache_read_input_tokens=2000),
        )
        done = vaultbot(
            tmp_path,
            "chat",
            stdin=line + "\n",
            env=env(ANTHROPIC_BASE_URL=fake.base_url, VAULTBOT_MODEL__NAME=model),
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("vaultbot> Noted.")  # then where the note went


def run(*args: str, **more: str) -> Result:
    """A read-only command, in-process (the chat that wrote the data ran as a subprocess)."""
    return CliRunner().invoke(cli, list(args), env=env(**more), catch_exceptions=False)


def doctor(**more: str) -> Result:
    """`vaultbot doctor`, in-process; a fake API answers its question about the model."""
    with FakeAnthropic() as fake:
        return run("doctor", ANTHROPIC_BASE_URL=fake.base_url, **more)


def env(**more: str) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "sk-ant-usage", "VAULTBOT_TIMEZONE": ZONE, **more}


def test_usage_runs_and_doctor_show_what_a_dated_model_cost(tmp_path: Path) -> None:
    chat(tmp_path, "claude-sonnet-4-5", answered_by="claude-sonnet-4-5-20250929")
    # claude-sonnet-4-5: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million tokens.
    first = (1000 * 3 + 200 * 15 + 2000 * 3.75) / 1e6
    second = (50 * 3 + 30 * 15 + 2000 * 0.30) / 1e6
    today = datetime.now(UTC).astimezone(ZoneInfo(ZONE)).date().isoformat()

    done = run("usage", "--json")
    assert done.exit_code == 0, done.output
    [row] = json.loads(done.output)
    assert row == {
        "day": today,
        "model": "claude-sonnet-4-5",
        "input_tokens": 1050,
        "output_tokens": 230,
        "cache_read_tokens": 2000,
        "cache_write_tokens": 2000,
        "cost_usd": pytest.approx(first + second),
    }
    table = run("usage", "--since", "7d").output
    assert "claude-sonnet-4-5" in table and today in table
    assert table.splitlines()[-1].split() == ["total", "1,050", "230", "2,000", "2,000", "$0.0147"]

    [listed] = json.loads(run("runs", "--json").output)
    assert listed["cost_usd"] == pytest.approx(0.0147)
    listing = run("runs").output
    [row] = [line for line in listing.splitlines() if listed["id"][:8] in line]
    # What the run was about, and the cached tokens the cost counts besides input and output.
    assert "remember the dentist" in row and "1050/230 +4000 cached" in row and "$0.0147" in row
    assert "cached input (written at 1.25 times the input price, read at a tenth of it)" in listing
    shown = json.loads(run("runs", "show", listed["id"], "--json").output)
    assert shown["cost_usd"] == pytest.approx(0.0147)

    checked = doctor(VAULTBOT_BUDGET__DAILY_USD="5")
    assert "ok   pricing: 12 models priced (built-in table)" in checked.output
    assert "budget: $0.01 spent of $5.00 today; resets at 00:00 on" in checked.output
    assert f"({ZONE})" in checked.output


def test_a_model_missing_from_the_table_costs_the_highest_price_and_doctor_says_so(tmp_path: Path) -> None:
    chat(tmp_path, "claude-mystery-9")
    [row] = json.loads(run("usage", "--json").output)
    # The highest prices in the built-in table: $10 in, $50 out, $12.50 cache write, $0.50 cache read.
    assert row["cost_usd"] == pytest.approx((1050 * 10 + 230 * 50 + 2000 * 12.5 + 2000 * 0.5) / 1e6)
    checked = doctor(VAULTBOT_MODEL__NAME="claude-mystery-9")
    assert checked.exit_code == 1
    [line] = [line for line in checked.output.splitlines() if "pricing" in line]
    assert line.startswith("FAIL") and "claude-mystery-9 not in the price table" in line


def test_a_misspelt_model_used_once_is_a_note_once_the_model_in_force_is_priced(tmp_path: Path) -> None:
    chat(tmp_path, "claude-sonet-5")
    for checked in (doctor(), run("doctor", ANTHROPIC_API_KEY="")):  # the default model, then capture mode
        [line] = [line for line in checked.output.splitlines() if "pricing" in line]
        assert line.startswith("ok") and "earlier runs used claude-sonet-5, not in the table" in line, line


def test_rows_are_named_by_the_model_asked_for_even_when_the_api_says_otherwise(tmp_path: Path) -> None:
    chat(tmp_path, "claude-sonnet-5", answered_by="claude-fake")
    [row] = json.loads(run("usage", "--json").output)
    assert row["model"] == "claude-sonnet-5"
    # Priced as claude-sonnet-5 ($2 in, $10 out, $2.50 cache write, $0.20 cache read): the API's
    # own name for it is not in the table.
    assert row["cost_usd"] == pytest.approx((1050 * 2 + 230 * 10 + 2000 * 2.5 + 2000 * 0.2) / 1e6)
    assert "FAIL" not in doctor().output


def test_the_users_pricing_file_wins(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "pricing.toml").write_text(
        '[models."claude-mystery-9"]\ninput = 1.0\noutput = 2.0\ncache_write = 0.0\ncache_read = 0.0\n'
    )
    chat(tmp_path, "claude-mystery-9")
    [row] = json.loads(run("usage", "--json").output)
    assert row["cost_usd"] == pytest.approx((1050 * 1.0 + 230 * 2.0) / 1e6)
    checked = doctor()
    assert "FAIL" not in checked.output and "with config/pricing.toml" in checked.output


def test_a_broken_pricing_file_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "pricing.toml").write_text('[models."claude-x"]\ninput = "cheap"\n')
    done = vaultbot(tmp_path, "chat", stdin="hello\n", env=env())
    assert done.returncode == 2
    assert (
        done.stderr.startswith("vaultbot: config/pricing.toml: models.claude-x.") and len(done.stderr.splitlines()) == 1
    )


def test_since_a_date_means_that_day_in_the_users_zone(tmp_path: Path) -> None:
    async def seed() -> None:
        db = await Database.open(tmp_path / "data" / "vaultbot.db")
        try:
            for at in (datetime(2026, 3, 2, 1, 0, tzinfo=UTC), datetime(2026, 3, 2, 15, 0, tzinfo=UTC)):
                await Store(db).record_usage("r", CallUsage(at, "claude-haiku-4-5", 1000, 0, 0, 0, 0.001))
        finally:
            await db.close()

    asyncio.run(seed())
    # 01:00 UTC on 2 March is still 1 March in New York.
    shown = run("usage", "--json", "--since", "2026-03-02", VAULTBOT_TIMEZONE="America/New_York")
    assert [(r["day"], r["input_tokens"]) for r in json.loads(shown.output)] == [("2026-03-02", 1000)]
    everything = json.loads(run("usage", "--json", VAULTBOT_TIMEZONE="America/New_York").output)
    assert [r["day"] for r in everything] == ["2026-03-01", "2026-03-02"]
