"""How the interaction log and the runs read to a person at a terminal.

Cells are shown as written: tabulate would read a run id such as ``474759e9`` or a summary such as
``1e3`` as a number and print ``4.74759e+14`` or ``1000``, so the tables of text turn that off.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from tabulate import tabulate

from bot.cli.logs import escape_controls
from bot.clock import local_time
from bot.store import UsageRow, short_id

_AGE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(value: str) -> datetime:
    """An ISO 8601 date or time (UTC if no zone), or an age such as ``30m``, ``2h``, ``7d``."""
    value = value.strip()
    age = _AGE.match(value)
    if age:
        return datetime.now(UTC) - timedelta(**{_UNITS[age.group(2)]: int(age.group(1))})
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is neither an ISO 8601 date/time nor an age like 2h or 7d") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _cut(text: str | None, width: int) -> str:
    # Summaries quote outside text (a stranger's name): no line breaks, no terminal escape sequences.
    text = escape_controls(" ".join((text or "").split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def interactions_table(rows: list[dict[str, Any]], tz: tzinfo) -> str:
    """The interaction log as a table, its times in ``tz``."""
    if not rows:
        return "No interactions logged yet."
    return tabulate(
        [
            [
                r["id"],
                local_time(r["created_at"], tz, seconds=True),
                r["conversation"],
                r["category"],
                _cut(r["summary"], 70),
            ]
            for r in rows
        ],
        headers=["id", "when", "conversation", "category", "summary"],
        disable_numparse=True,
    )


def _tokens(usage: dict[str, Any] | None) -> str:
    """Input/output tokens, and the cached input, which the cost counts too (written dearer, read cheaper)."""
    usage = usage or {}
    cached = usage.get("cache_creation_input_tokens", 0) + usage.get("cache_read_input_tokens", 0)
    return f"{usage.get('input_tokens', 0)}/{usage.get('output_tokens', 0)}" + (f" +{cached} cached" if cached else "")


def runs_table(rows: list[dict[str, Any]], tz: tzinfo) -> str:
    """Runs as a table, its times in ``tz``."""
    if not rows:
        return "No runs yet."
    return tabulate(
        [
            [
                short_id(r["id"]),
                local_time(r["started_at"], tz, seconds=True),
                r["conversation"],
                _cut(r.get("about"), 30),
                r["status"],
                _tokens(r.get("usage")),
                _dollars(r.get("cost_usd")),
                ",".join(r.get("tools_called") or []) or "-",
                _cut(r.get("reason"), 40),
            ]
            for r in rows
        ],
        headers=["id", "started", "conversation", "about", "status", "tokens in/out", "cost", "tools", "reason"],
        disable_numparse=True,
    ) + (
        "\nThe cost counts every token: input, output, and the cached input (written at 1.25 times the input "
        "price, read at a tenth of it); `vaultbot runs show ID` gives each call's."
    )


def _dollars(amount: float | None) -> str:
    # Four decimals: one short turn costs a fraction of a cent.
    return f"${amount or 0.0:.4f}"


def usage_json(row: UsageRow) -> dict[str, Any]:
    """One row of ``vaultbot usage --json``."""
    return {**asdict(row), "cost_usd": round(row.cost_usd, 6)}


def usage_table(rows: list[UsageRow]) -> str:
    """Tokens and cost per day and model, with a total line."""
    if not rows:
        return "No model calls recorded yet."
    fields = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    body = [[r.day, r.model, *(getattr(r, f) for f in fields), _dollars(r.cost_usd)] for r in rows]
    totals = ["total", "", *(sum(getattr(r, f) for r in rows) for f in fields), _dollars(sum(r.cost_usd for r in rows))]
    return tabulate(
        [*body, totals],
        headers=["day", "model", "input", "output", "cache read", "cache write", "cost"],
        intfmt=",",
        colalign=("left", "left", "right", "right", "right", "right", "right"),
    )


def ambiguous_run(prefix: str, matches: list[dict[str, Any]], tz: tzinfo) -> str:
    """What ``runs show`` says when ``prefix`` names several runs: each, with its full id."""
    lines = [f"vaultbot: {prefix!r} is the start of {len(matches)} run ids; give more characters:"]
    lines += [
        f"  {m['id']}  {local_time(m['started_at'], tz, seconds=True)}  {m['conversation']}  {m['status']}"
        for m in matches
    ]
    return "\n".join(lines)


def run_detail(run: dict[str, Any], tz: tzinfo) -> str:
    """One run and its steps, its time in ``tz``."""
    usage = run.get("usage") or {}
    head = [
        f"run {run['id']}  {run['status']}" + (f" ({run['reason']})" if run.get("reason") else ""),
        f"conversation {run['conversation']}  model {run.get('model', '-')}"
        f"  started {local_time(run['started_at'], tz, seconds=True)}"
        f"  cost {_dollars(run.get('cost_usd'))}",
        "tokens: "
        + ", ".join(f"{k.replace('_input_tokens', '').replace('_tokens', '')} {v}" for k, v in usage.items()),
        "",
    ]
    steps = tabulate(
        [
            [
                s["index"],
                s["kind"],
                s["name"],
                "error" if s["is_error"] else "ok",
                f"{s['duration_ms']:.1f}",
                _cut(json.dumps(s["input"], ensure_ascii=False, default=str), 50),
                _cut(s.get("summary") or json.dumps(s["output"], ensure_ascii=False, default=str), 60),
            ]
            for s in run.get("steps", [])
        ],
        headers=["#", "kind", "name", "result", "ms", "input", "output"],
        disable_numparse=True,
        colalign=("right", "left", "left", "left", "right", "left", "left"),
    )
    return "\n".join(head) + steps
