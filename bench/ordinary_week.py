"""Friction, measured: how many consent questions an ordinary week of use asks.

A scripted week (7 days of 28 turns: notes, questions about them, a link the person sends and questions
about the clipped page, a note of its key points, lookups on a trusted and an untrusted MCP server,
plain reminders and a scheduled task every other day, small talk) through the real runner, tools,
store and vault, with a model that does what the person asks and nothing a page says. No ``/new``: the
person never clears the conversation, so a clipped page stays in its history for as long as the history
window holds it. Counted: the questions asked (``consent_questions``), per 100 turns.

    .venv/bin/python bench/ordinary_week.py
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.turns import running  # noqa: E402
from bot.app import App  # noqa: E402
from bot.consent import unlabelled  # noqa: E402
from bot.runner import ModelReply  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.fakes.scripted_model import ScriptedModel, call, say  # noqa: E402
from tests.fakes.web_server import FakeWeb, html  # noqa: E402
from tests.mcp.conftest import stdio  # noqa: E402

TOPICS = ["dentist", "kitchen", "taxes", "garden", "bike", "lentils", "Lisbon trip", "piano", "car insurance"]


def assistant(messages: list[dict[str, Any]]) -> ModelReply:
    """A model that does what the person asked, in one round, then ends its turn."""
    last = messages[-1]["content"]
    if not isinstance(last, str):
        return say("Done.")
    asked = last.split("] ", 1)[-1]
    if asked.startswith("note: "):
        title = asked[6:40]
        return call(("vault_write", {"folder": "Inbox", "title": title, "content": asked[6:]}))
    if asked.startswith("what do I know about "):
        return call(("vault_search", {"query": asked.removeprefix("what do I know about ")}))
    if link := re.match(r"read (\S+)", asked):
        return call(("clip_link", {"url": link.group(1)}))
    if asked == "summarise the page":
        return call(("vault_read", {"path": _last_clip(messages)}))
    if asked == "save its key points":
        content = f"Key points of {_last_clip(messages)}: simmer red lentils with cumin for twenty minutes."
        return call(("vault_write", {"folder": "Notes", "title": f"Key points {len(messages)}", "content": content}))
    if asked == "check my calendar":
        return call(("mcp__calendar__inbox", {}))
    if asked == "check my mail":
        return call(("mcp__mail__inbox", {}))
    if remind := re.match(r"remind me (.+)", asked):
        return call(("schedule_message", {"text": remind.group(1), "at": "2099-01-01T09:00"}))
    if asked == "every morning, summarise my new notes":
        task = {"text": "summarise my new notes", "at": "2099-01-01T08:00", "repeat": "FREQ=DAILY", "run_model": True}
        return call(("schedule_message", task))
    return say("Sure.")


def _last_clip(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                try:
                    result = json.loads(unlabelled(block["content"]).split("… [", 1)[0])
                except ValueError:
                    continue
                if isinstance(result, dict) and "words" in result:
                    return str(result["path"])
    return "Clippings"


def day(n: int, web: FakeWeb) -> list[str]:
    """One day's 28 messages."""
    topic = TOPICS[n % len(TOPICS)]
    page = f"/day-{n}"
    web.routes[page] = html(
        f"<html><head><title>On {topic}, day {n}</title></head><body><article><h1>On {topic}</h1>"
        + "".join(
            f"<p>Paragraph {i} about {topic}: simmer red lentils with cumin for twenty minutes.</p>" for i in range(8)
        )
        + "</article></body></html>"
    )
    notes = [f"note: {TOPICS[(n + i) % len(TOPICS)]} — call back on Thursday about item {n}-{i}" for i in range(6)]
    questions = [f"what do I know about {TOPICS[(n + i) % len(TOPICS)]}" for i in range(6)]
    messages = [
        "good morning",
        *notes[:3],
        "check my calendar",
        *questions[:3],
        f"read {web.url(page)}",
        "summarise the page",
        "save its key points",
        f"what do I know about {topic}",
        "what do I know about cumin",
        "note: try the lentil soup from that page on Sunday",
        "check my mail",
        *notes[3:],
        f"remind me to call the {topic} people at 10",
        *questions[3:],
        "check my calendar",
        "thanks",
        f"remind me to water the {TOPICS[(n + 3) % len(TOPICS)]} plants",
        "check my mail",
        "every morning, summarise my new notes" if n % 2 == 0 else "how was my week?",
        "good night",
    ]
    assert len(messages) == 28
    return messages


async def week() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeWeb() as web:
        folder = Path(tmp)
        inbox = folder / "inbox.txt"
        inbox.write_text("From: a friend\nLunch on Friday?", encoding="utf-8")
        env = {"INBOX_FILE": str(inbox), "OUTBOX_FILE": str(folder / "sent.jsonl")}
        settings = Settings(
            _env_file=None,
            vault={"path": folder / "vault", "search_by_meaning": False},
            store={"path": folder / "vaultbot.db"},
            clip={"allow_private": True},
            mcp={"servers": {"mail": stdio(env=env, trusted=False), "calendar": stdio(env=env, trusted=True)}},
        )
        app = await App.open(settings, model=ScriptedModel(assistant))
        try:
            async with running(app) as bench:
                turns = 0
                for n in range(7):
                    for text in day(n, web):
                        await bench.turn("week", text)
                        turns += 1
            rows = await app.db.fetchall("SELECT tool FROM consent_questions")
        finally:
            await app.close()
    asked = Counter(row["tool"] for row in rows)
    print(f"{turns} turns, {len(rows)} consent questions: {len(rows) * 100 / turns:.1f} per 100 turns")
    for tool, count in asked.most_common():
        print(f"  {tool}: {count}")


if __name__ == "__main__":
    asyncio.run(week())
