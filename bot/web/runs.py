"""Runs: the list, and one run step by step (model calls, tool calls, events, how it ended)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from bot.consent import labelled_parts
from bot.store import MIN_PREFIX, RUN_STATUSES
from bot.web.changes import run_changes
from bot.web.sources import sources

PAGE_SIZE = 50
# A longer message (a document's whole text comes with it) is folded: its start shows, a tap shows
# the rest, so the steps stay near the top of the page on a phone.
FOLD_CHARS = 600
FOLD_LINES = 10


async def run_list(request: Request) -> Response:
    """Runs, newest first, optionally of one status."""
    review = sources(request)
    status = request.query_params.get("status", "")
    before = request.query_params.get("before") or None
    found = await review.reader.runs(status=status, before=before, limit=PAGE_SIZE)
    following = found[-1]["started_at"] if len(found) == PAGE_SIZE else None
    data = {"runs": found, "status": status, "statuses": RUN_STATUSES, "next_before": following}
    return review.renderer.page(request, "runs.html", data)


async def run_page(request: Request) -> Response:
    """One run: the user's message, each step, the notes and log entries it made, its attempts."""
    review = sources(request)
    run_id = request.path_params["run_id"]
    run = await review.reader.run(run_id)
    if run is None and len(run_id) >= MIN_PREFIX:
        # Every page shows a run's first 8 characters: any unique start of 6 or more names it, as `runs show` takes.
        found = await review.reader.run_ids_starting_with(run_id.lower())
        run = await review.reader.run(found[0]) if len(found) == 1 else None
    if run is None:
        return review.renderer.page(request, "missing.html", {"what": f"run {run_id}"}, status=404)
    for step in run["steps"]:
        step["view"] = _step_view(step)
        consent = step["view"]["consent"]
        if consent and consent["question"] and consent["id"] and review.answers is not None:
            asked = await review.reader.question(consent["id"])
            consent["open"] = asked is not None and asked["state"] == "asked"
    run["message_start"] = folded(run["message"])
    return review.renderer.page(request, "run.html", {"run": run, "changes": await run_changes(review, run)})


def folded(text: str | None) -> str | None:
    """The start a long ``text`` is shown by while folded (its first lines, cut at a word), or None
    when it is short enough to show whole."""
    if text is None or (len(text) <= FOLD_CHARS and text.count("\n") < FOLD_LINES):
        return None
    start = "\n".join(text.splitlines()[:FOLD_LINES])
    if len(start) > FOLD_CHARS:
        start = start[:FOLD_CHARS].rsplit(" ", 1)[0] or start[:FOLD_CHARS]
    return start.rstrip()


def _step_view(step: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of a step besides its raw input and output."""
    output = step["output"] if isinstance(step["output"], dict) else {}
    view: dict[str, Any] = {
        "error_type": None,
        "error": None,
        "stop_reason": None,
        "text": None,
        "images": [],
        "consent": None,
    }
    if step["kind"] == "tool" and step["is_error"]:
        view["error_type"] = output.get("error_type") or "error"
        view["error"] = output.get("error")
    if step["kind"] == "model":
        view["stop_reason"] = output.get("stop_reason")
        texts = [
            b.get("text", "") for b in output.get("content", []) if isinstance(b, dict) and b.get("type") == "text"
        ]
        view["text"] = "\n\n".join(t for t in texts if t) or None
        view["calls"] = [
            b.get("name") for b in output.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
    if step["kind"] == "tool":
        view["input_brief"] = brief(step["input"])
        view["output_brief"] = brief({k: v for k, v in output.items() if k != "success"} if output else step["output"])
    if step["kind"] == "event" and step["name"] == "consent":
        # A question for consent and its answer, in the words the person saw.
        given = step["input"] if isinstance(step["input"], dict) else {}
        view["consent"] = {
            "tool": given.get("tool"),
            "id": given.get("id"),
            "open": False,  # still waiting, and this page can answer it (set by run_page)
            "question": given.get("question"),
            "state": output.get("state"),
            "by": output.get("by"),
        }
    if step["kind"] == "event" and step["name"] == "images":
        # The photos the model saw, shown from the vault (the run's own record says which, and how big).
        view["images"] = [image for image in output.get("shown", []) if isinstance(image, dict) and "path" in image]
    return view


def brief(value: Any, *, limit: int = 240) -> str:
    """``key: value · key: value`` on one line, each value cut short: what a glance needs."""
    if isinstance(value, dict):
        parts = [f"{k}: {_cut(_plain(v), 70)}" for k, v in value.items()]
        return _cut(" · ".join(parts), limit)
    return _cut(_plain(value), limit)


def _plain(value: Any) -> str:
    """A value as a glance reads it: text as its words (a label's source in brackets), the rest as JSON."""
    if isinstance(value, str):
        return " ".join(said if source is None else f"[{source}] {said}" for source, said in labelled_parts(value))
    return json.dumps(value, ensure_ascii=False, default=str)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
