"""vault_write's related notes and vault_search by meaning, through the dispatcher of a real app."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

from bot.app import App
from bot.tools import ToolContext, build_dispatcher
from vault import Related, Vault

CONTEXT = ToolContext(conversation="terminal:ann", channel="terminal", recipient="ann", run_id="r", inbound_id="i")


async def test_a_created_note_comes_back_with_the_notes_closest_in_meaning(
    make_app: Callable[..., Awaitable[App]],
) -> None:
    app = await make_app(vault={"search_by_meaning": True})
    tools = build_dispatcher(app.notes, app.bus, app.store)
    for title, content in [
        ("Ana's lasagne", "Layers of pasta, ricotta, spinach and tomato sauce. Bake 45 minutes."),
        ("Dentist", "Appointment moved to Thursday at 3pm, Dr Okafor."),
        ("Spring plans", "Tomatoes along the south fence, basil in pots."),
        ("Car insurance", "Renewal due in March; compare three quotes first."),
    ]:
        await tools.call("vault_write", {"folder": "Notes", "title": title, "content": content}, CONTEXT)
    assert app.notes.wait_for_meaning(60)
    created = await tools.call(
        "vault_write",
        {"folder": "Recipes", "title": "Sunday pasta bake", "content": "Oven pasta with cheese and tomato."},
        CONTEXT,
    )
    related = created.result["related"]
    assert 1 <= len(related) <= 3
    assert related[0] == {"path": "Notes/Ana's lasagne.md", "title": "Ana's lasagne"}
    appended = await tools.call(
        "vault_write",
        {"folder": "Recipes", "title": "Sunday pasta bake", "content": "Serves four.", "mode": "append"},
        CONTEXT,
    )
    assert "related" not in appended.result  # only a note that is created
    found = await tools.call("vault_search", {"query": "my teeth checkup"}, CONTEXT)
    assert found.result["results"][0]["path"] == "Notes/Dentist.md"
    assert set(found.result["results"][0]) == {"path", "title", "snippet"}


async def test_without_search_by_meaning_a_created_note_has_no_related_notes(
    make_app: Callable[..., Awaitable[App]],
) -> None:
    app = await make_app(vault={"search_by_meaning": False})
    tools = build_dispatcher(app.notes, app.bus, app.store)
    await tools.call("vault_write", {"folder": "Notes", "title": "Lasagne", "content": "Pasta bake."}, CONTEXT)
    created = await tools.call("vault_write", {"folder": "Notes", "title": "Pasta", "content": "Pasta bake."}, CONTEXT)
    assert created.result["related"] == []


class BrokenRelated(Vault):
    """A vault whose search for related notes fails (a damaged meaning index, a model out of memory)."""

    def related(self, path: str, limit: int = 3) -> list[Related]:
        raise sqlite3.DatabaseError("database disk image is malformed")


async def test_a_note_saved_when_its_related_notes_cannot_be_found_is_said_saved(
    make_app: Callable[..., Awaitable[App]], tmp_path: Path
) -> None:
    # Saying it failed would be untrue (the note is on disk), and the model would write it again as "Title 2".
    app = await make_app()
    notes = BrokenRelated(tmp_path / "vault")
    try:
        tools = build_dispatcher(notes, app.bus, app.store)
        created = await tools.call("vault_write", {"folder": "Notes", "title": "Pasta", "content": "Bake."}, CONTEXT)
        assert not created.is_error and created.result["path"] == "Notes/Pasta.md"
        assert created.result["related"] == []
        assert (tmp_path / "vault" / "Notes" / "Pasta.md").exists()
    finally:
        notes.close()
