"""A message that is only a link is clipped into a note named after the page's title, in capture mode
(no API key) and with the assistant on alike, without a model call; when clipping fails, the link is
filed in the inbox as before and the log says why."""

from __future__ import annotations

import json
from pathlib import Path

from bot.app import App
from tests.clip.conftest import ClipApp
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.web_server import FakeWeb
from tests.helpers import outbox, run_inbox
from tests.runner.conftest import send
from tests.test_cli import vaultbot


async def logged(app: App) -> list[tuple[str, str]]:
    rows = await app.db.fetchall("SELECT category, summary FROM interactions ORDER BY id")
    return [(row["category"], row["summary"]) for row in rows]


async def test_a_message_that_is_only_a_link_is_clipped_in_capture_mode(clip_app: ClipApp, web: FakeWeb) -> None:
    app = await clip_app(claude=False)
    await send(app, web.url("/recipe"))
    await run_inbox(app)
    note = app.notes.root / "Clippings" / "Easy Lentil Soup.md"
    assert "Rinse two hundred grams of red lentils" in note.read_text(encoding="utf-8")
    assert not (app.notes.root / "Inbox").exists()
    [reply] = await outbox(app)
    assert reply.text.startswith("Saved to Clippings/Easy Lentil Soup.md in your vault.")
    assert await logged(app) == [("capture", "Clipped to Clippings/Easy Lentil Soup.md: Easy Lentil Soup")]
    [run] = await app.store.list_runs(limit=1)
    assert run["status"] == "completed"


async def test_a_link_that_cannot_be_clipped_is_filed_as_before_and_the_log_says_why(
    clip_app: ClipApp, web: FakeWeb
) -> None:
    app = await clip_app(claude=False)
    await send(app, web.url("/gone/old-post.html"))
    await run_inbox(app)
    note = app.notes.root / "Inbox" / "127.0.0.1 gone old post.md"
    assert web.url("/gone/old-post.html") in note.read_text(encoding="utf-8")
    assert not (app.notes.root / "Clippings").exists()
    [reply] = await outbox(app)
    assert reply.text.startswith(
        "Saved to Inbox/127.0.0.1 gone old post.md in your vault. "
        "The link could not be clipped: The site answered 404 Not Found; it is kept as you sent it.\n"
    )
    [(category, summary)] = await logged(app)
    assert category == "capture"
    assert summary == (
        "Captured to the inbox: 127.0.0.1 gone old post "
        "(the link could not be clipped: The site answered 404 Not Found.)"
    )


async def test_a_link_with_words_around_it_is_filed_not_clipped(clip_app: ClipApp, web: FakeWeb) -> None:
    app = await clip_app(claude=False)
    await send(app, f"read this later {web.url('/recipe')}")
    await run_inbox(app)
    assert web.hits == {} and len(list((app.notes.root / "Inbox").iterdir())) == 1


def test_a_clipped_link_after_a_captured_note_is_answered_with_the_clipping_in_the_terminal(
    tmp_path: Path, web: FakeWeb
) -> None:
    """The reply names this message's note: not the one captured earlier in the conversation, and
    the log does not borrow an earlier link's failure either."""
    lines = f"buy oat milk\n{web.url('/gone/old-post.html')}\ncall mum\n{web.url('/recipe')}\n"
    done = vaultbot(tmp_path, "chat", stdin=lines, env={"VAULTBOT_CLIP__ALLOW_PRIVATE": "true"})
    assert done.returncode == 0, done.stderr
    replies = [line for line in done.stdout.splitlines() if line.startswith("vaultbot> ")]
    assert replies == [
        "vaultbot> Saved to Inbox/buy oat milk.md in your vault.",
        "vaultbot> Saved to Inbox/127.0.0.1 gone old post.md in your vault. "
        "The link could not be clipped: The site answered 404 Not Found; it is kept as you sent it.",
        "vaultbot> Saved to Inbox/call mum.md in your vault.",
        "vaultbot> Saved to Clippings/Easy Lentil Soup.md in your vault.",
    ]
    assert (tmp_path / "data" / "vault" / "Clippings" / "Easy Lentil Soup.md").exists()
    log = vaultbot(tmp_path, "log", "--json")
    summaries = [entry["summary"] for entry in json.loads(log.stdout)]
    assert summaries[0] == "Clipped to Clippings/Easy Lentil Soup.md: Easy Lentil Soup"
    assert summaries[1] == "Captured to the inbox: call mum"
    assert summaries[2].endswith("(the link could not be clipped: The site answered 404 Not Found.)")
    assert summaries[3] == "Captured to the inbox: buy oat milk"


def test_with_the_assistant_on_a_link_sent_alone_is_clipped_at_once_and_a_link_with_words_goes_to_it(
    tmp_path: Path, web: FakeWeb, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.text("It is a lentil soup recipe; want me to clip it?"))
    lines = f"{web.url('/recipe')}\nwhat is this one about? {web.url('/recipe')}\n"
    env = {
        "VAULTBOT_CLIP__ALLOW_PRIVATE": "true",
        "ANTHROPIC_API_KEY": "sk-ant-links-test",
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
        "VAULTBOT_MODEL__SDK_MAX_RETRIES": "0",
    }
    done = vaultbot(tmp_path, "chat", stdin=lines, env=env)
    assert done.returncode == 0, done.stderr
    replies = [line for line in done.stdout.splitlines() if line.startswith("vaultbot> ")]
    assert replies == [
        "vaultbot> Saved to Clippings/Easy Lentil Soup.md in your vault.",
        "vaultbot> It is a lentil soup recipe; want me to clip it?",
    ]
    assert len(fake_anthropic.requests) == 1  # the link alone asked no model
    assert "what is this one about?" in json.dumps(fake_anthropic.requests[0].body["messages"][-1])
    assert (tmp_path / "data" / "vault" / "Clippings" / "Easy Lentil Soup.md").exists()
