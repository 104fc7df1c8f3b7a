"""Progress drafts as a channel sees them: segments, the end of a run, unsubscribing."""

from __future__ import annotations

import asyncio

from bot.streaming import Draft, Progress


def latest(changes: list[Draft]) -> Draft:
    """The one draft that changed."""
    [draft] = changes
    return draft


async def test_text_after_a_tool_call_starts_a_new_segment_and_text_within_one_accumulates() -> None:
    hub = Progress()
    with hub.subscribe("tg") as seen:
        writer = hub.open(key="m1", channel="tg", conversation="c", recipient="u")
        assert writer is not None
        shown: list[tuple[int, str]] = []
        for step in (["Let me ", "check."], ["tool"], ["Found ", "it", "."], ["tool", "tool"], ["Done."]):
            for part in step:
                if part == "tool":
                    writer.tool_call("search")
                else:
                    writer.text(part)
            draft = latest(await asyncio.wait_for(seen.changes(), timeout=5))
            if not draft.working:
                shown.append((draft.segment, draft.text))
        # What a channel shows: each segment's whole text, and a new segment after each tool call.
        assert shown == [(0, "Let me check."), (1, "Found it."), (2, "Done.")]


async def test_an_ended_run_is_no_longer_live_and_its_subscribers_see_it_done() -> None:
    hub = Progress()
    with hub.subscribe("tg") as seen:
        writer = hub.open(key="m1", channel="tg", conversation="c", recipient="u")
        assert writer is not None
        writer.text("Hello")
        assert hub.live("m1") is writer.draft
        writer.end()
        draft = latest(await asyncio.wait_for(seen.changes(), timeout=5))
        assert draft.done and draft.text == "Hello"
        assert hub.live("m1") is None  # a channel stops treating the run as still being written


async def test_once_every_subscription_is_closed_runs_stop_drafting() -> None:
    hub = Progress()
    kept = hub.subscribe("tg")
    with hub.subscribe("tg"):
        pass
    writer = hub.open(key="m1", channel="tg", conversation="c", recipient="u")
    assert writer is not None
    writer.text("for the one still listening")
    assert [d.key for d in await asyncio.wait_for(kept.changes(), timeout=5)] == ["m1"]
    kept.close()
    assert hub.open(key="m2", channel="tg", conversation="c", recipient="u") is None  # nobody would see it
