"""Full-text search on the FTS5 index, and the index staying true to the disk."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vault import InvalidNote, Vault, daily_entry


def write_by_hand(notes: Vault, rel: str, text: str) -> Path:
    """A note written behind the vault's back, as Obsidian or a sync would."""
    path = notes.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def paths(hits: list) -> list[str]:
    return [hit.path for hit in hits]


def test_a_title_match_ranks_above_a_body_match_and_snippets_show_the_match(notes: Vault) -> None:
    notes.write("", "Groceries", "eggs and bread")
    notes.write("", "Weekend plan", "remember groceries on saturday, then the long walk by the river")
    hits = notes.search("groceries")
    assert paths(hits) == ["Groceries.md", "Weekend plan.md"]
    assert "groceries on saturday" in hits[1].snippet and "\n" not in hits[1].snippet


def test_every_word_must_match_and_the_last_word_matches_as_a_prefix(notes: Vault) -> None:
    notes.write("", "Plumber", "call the plumber about the leaking tap")
    notes.write("", "Tap dance", "lessons on thursday")
    assert paths(notes.search("plumber leak")) == ["Plumber.md"]
    assert paths(notes.search("leaking zebra")) == []


def test_tag_and_folder_filters(notes: Vault) -> None:
    notes.write("Work", "Budget", "numbers for the budget", tags=["finance"])
    notes.write("Home", "Budget at home", "household budget", tags=["family"])
    notes.write("Work/Old", "Budget 2020", "old budget")
    assert paths(notes.search("budget", tags=["finance"])) == ["Work/Budget.md"]
    assert sorted(paths(notes.search("budget", folder="Work"))) == ["Work/Budget.md", "Work/Old/Budget 2020.md"]
    assert paths(notes.search("budget", folder="Home", tags=["#family"])) == ["Home/Budget at home.md"]


@pytest.mark.parametrize(
    "query",
    ['"', '""unbalanced', "*", "AND OR NOT", "NEAR(a b)", "-milk", "title:milk", "milk^", "🍮", "ünïcødé", "a'b"],
)
def test_hostile_queries_never_reach_fts5_as_syntax(notes: Vault, query: str) -> None:
    notes.write("", "Milk", "oat milk and ünïcødé")
    notes.search(query)  # must not raise


def test_a_blank_query_is_a_clear_error(notes: Vault) -> None:
    with pytest.raises(InvalidNote):
        notes.search("   ")


def test_edits_made_behind_the_vaults_back_are_seen_by_the_next_search_and_list(notes: Vault) -> None:
    notes.write("", "Kept", "stays the same")
    changed = write_by_hand(notes, "Changed.md", "about apples")
    deleted = write_by_hand(notes, "Deleted.md", "about bananas")
    renamed = write_by_hand(notes, "Before.md", "about cherries")
    assert paths(notes.search("apples")) == ["Changed.md"]
    assert paths(notes.search("bananas")) == ["Deleted.md"]

    changed.write_text("about pears now", encoding="utf-8")
    os.utime(changed, ns=(changed.stat().st_atime_ns, changed.stat().st_mtime_ns + 1_000_000))
    deleted.unlink()
    renamed.rename(notes.root / "After.md")
    write_by_hand(notes, "Sub/New.md", "---\ntitle: Fresh\ntags: [fruit]\n---\nabout figs")

    assert paths(notes.search("apples")) == []
    assert paths(notes.search("pears")) == ["Changed.md"]
    assert paths(notes.search("bananas")) == []
    assert paths(notes.search("cherries")) == ["After.md"]
    assert paths(notes.search("figs", tags=["fruit"])) == ["Sub/New.md"]
    assert sorted(n.path for n in notes.list("").notes) == ["After.md", "Changed.md", "Kept.md"]
    assert notes.list("Sub").notes[0].title == "Fresh"


def test_the_bots_own_write_is_searchable_at_once_even_with_a_lazy_disk_check(tmp_path: Path) -> None:
    with Vault(tmp_path / "v", max_staleness=3600) as notes:
        notes.write("", "Idea", "a zeppelin made of notes")
        assert paths(notes.search("zeppelin")) == ["Idea.md"]
        notes.write("", "Idea", "with a second deck", mode="append")
        assert paths(notes.search("deck")) == ["Idea.md"]


def test_start_up_reuses_the_index_and_rereads_nothing_unchanged(tmp_path: Path) -> None:
    with Vault(tmp_path / "v") as notes:
        for i in range(20):
            notes.write("", f"Note {i}", f"body {i}")
    with Vault(tmp_path / "v") as again:
        assert again.sync().indexed == 0
        assert len(again.search("body")) == 10


def test_a_deleted_index_is_rebuilt_from_the_disk(tmp_path: Path) -> None:
    with Vault(tmp_path / "v") as notes:
        notes.write("", "Survivor", "still findable")
    (tmp_path / "v" / ".vaultbot" / "index.db").unlink()
    with Vault(tmp_path / "v") as again:
        assert paths(again.search("findable")) == ["Survivor.md"]


def test_a_damaged_index_is_set_aside_and_rebuilt_so_the_vault_still_opens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with Vault(tmp_path / "v") as notes:
        notes.write("", "Survivor", "still findable")
    index = tmp_path / "v" / ".vaultbot" / "index.db"
    index.write_bytes(b"not a database, a sync tool's half copy " * 200)
    with Vault(tmp_path / "v") as again:
        assert paths(again.search("findable")) == ["Survivor.md"]
        again.write("", "Newcomer", "also findable")
        assert sorted(paths(again.search("findable"))) == ["Newcomer.md", "Survivor.md"]
    assert (index.parent / "index.db.broken").read_bytes().startswith(b"not a database")
    assert "search index" in caplog.text and "rebuilt" in caplog.text


def test_read_by_alias(notes: Vault) -> None:
    write_by_hand(notes, "People/Ann Smith.md", "---\naliases: [Annie, A. Smith]\n---\nfriend from school")
    assert notes.read("annie").path == "People/Ann Smith.md"


def test_a_daily_note_gets_timestamped_lines_and_is_never_created_empty(notes: Vault) -> None:
    morning = dt.datetime(2026, 11, 22, 9, 15, tzinfo=dt.UTC)
    first = notes.daily_note("woke up early", when=morning)
    second = notes.daily_note("coffee  with\nAnn", when=morning.replace(hour=10))
    assert first.created and first.path == second.path
    title, _ = daily_entry("x", when=morning)
    text = (notes.root / "Daily" / f"{title}.md").read_text()
    assert "woke up early" in text and "coffee with Ann" in text and text.index("woke") < text.index("coffee")
    with pytest.raises(InvalidNote):
        notes.daily_note("   ", when=morning.replace(day=23))
    assert not (notes.root / "Daily" / f"{daily_entry('x', when=morning.replace(day=23))[0]}.md").exists()


def test_a_daily_note_pattern_names_the_file(notes: Vault) -> None:
    when = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)
    result = notes.daily_note("hello", folder="Journal", pattern="%Y/%m-%d", when=when)
    assert result.path.startswith("Journal/") and "2026" in result.path


def test_a_touched_file_with_the_same_bytes_is_not_reindexed(notes: Vault) -> None:
    path = write_by_hand(notes, "Same.md", "unchanged words")
    notes.sync()
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    report = notes.sync()
    assert report.indexed == 0
    path.write_text("changed words", encoding="utf-8")
    assert notes.sync().indexed == 1
    assert paths(notes.search("changed")) == ["Same.md"]


def test_a_slow_disk_check_never_puts_older_text_back_over_the_bots_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interleaving under test (a sync reads a note, vaultbot writes it, the sync stores what it
    # read) depends on thread timing, so the write is made to happen exactly in that gap.
    notes = Vault(tmp_path / "lazy", max_staleness=3600)  # no later check would hide the damage
    notes.write("", "Idea", "about zeppelins")
    path = notes.root / "Idea.md"
    path.write_text(path.read_text() + "\nan edit in Obsidian\n")
    catalog = notes._catalog
    read_entry = catalog._entry

    def read_then_bot_writes(rel: str, stat: os.stat_result) -> object:
        entry = read_entry(rel, stat)
        if rel == "Idea.md":
            monkeypatch.setattr(catalog, "_entry", read_entry)
            notes.write("", "Idea", "a brand new airship", mode="append")
        return entry

    monkeypatch.setattr(catalog, "_entry", read_then_bot_writes)
    with notes:
        notes.sync()
        assert "airship" in path.read_text()
        assert paths(notes.search("airship")) == ["Idea.md"]


def test_an_outside_edit_is_found_once_the_staleness_has_passed(tmp_path: Path) -> None:
    with Vault(tmp_path / "v", max_staleness=0.05) as notes:
        notes.write("", "Kept", "stays")
        assert paths(notes.search("stays")) == ["Kept.md"]  # the disk was just checked
        write_by_hand(notes, "Obsidian.md", "written in obsidian about quinces")
        # Waits on the condition itself: the next check of the disk is due 0.05 s after the last.
        deadline = time.monotonic() + 20
        while paths(notes.search("quinces")) != ["Obsidian.md"]:
            assert time.monotonic() < deadline, "an edit made outside vaultbot was never picked up"
            time.sleep(0.01)


def index_rows(root: Path) -> list[tuple]:
    """What the index holds about every note, as searches and listings read it."""
    conn = sqlite3.connect(root / ".vaultbot" / "index.db")
    try:
        return conn.execute(
            "SELECT f.path, f.size, f.mtime_ns, f.sha256, f.title, f.tags, f.aliases, f.updated, n.body, n.tags "
            "FROM files f JOIN notes_fts n ON n.rowid = f.id ORDER BY f.path"
        ).fetchall()
    finally:
        conn.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    title=st.text(min_size=1, max_size=30).filter(str.strip),
    content=st.text(max_size=60),
    tags=st.lists(st.text(max_size=12), max_size=3),
)
@example(title="a\n---\nb", content="---\ntitle: other\n---\nbody", tags=["#x", "yes"])
@example(title="🍮 pudding", content="\r\n\r\nbody\r\n", tags=["null", "2026-01-01"])
@example(title="\u2028line\x85next", content="\ufeff---\nx: 1\n---\n", tags=["a b"])
@example(title="0\x85🍮", content="", tags=[])  # the pure-Python emitter (used for emoji) folds U+0085
def test_what_a_write_indexes_is_what_a_rebuild_from_the_files_indexes(
    tmp_path_factory: pytest.TempPathFactory, title: str, content: str, tags: list[str]
) -> None:
    # A create indexes the note from what it rendered, without reading its file back: the index
    # must hold exactly what reading the file gives, or a note would be found (or titled) other
    # than after the index is rebuilt.
    root = tmp_path_factory.mktemp("v")
    with Vault(root) as notes:
        try:
            notes.write("Inbox", title, content, tags=tags, confidence=50)
        except InvalidNote:
            return  # refused input writes nothing
    written = index_rows(root)  # once closed: what the write put in line is committed
    (root / ".vaultbot" / "index.db").unlink()
    Vault(root).close()
    assert index_rows(root) == written
