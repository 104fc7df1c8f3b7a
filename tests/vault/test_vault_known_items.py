"""Known items: a query that is a note's title, file name, alias or heading puts that note first, with search
by meaning off, on, and half built. Real folders of Markdown, real SQLite indexes, the real shipped model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.vault.embedders import WAIT, Counting, Gated
from vault import Vault


def _release_note(number: int) -> str:
    # What crowded the title out in Obsidian's help vault: release notes that say "Canvas" over and over.
    return (
        f"# Obsidian 1.1.{number}\n\n## Canvas\n\n- Canvas: cards snap to the grid.\n- Canvas: faster canvas "
        f"loading, canvas export, canvas zoom.\n- Canvas groups keep their colour in canvas {number}.\n"
    )


# A small vault shaped like a real help vault: English pages, their translations, release notes that repeat
# the words of the titles, front matter titles and aliases, headings, accents.
NOTES = {
    "en/Plugins/Canvas.md": "Canvas is a core plugin for visual note-taking on an infinite space.\n",
    "no/Programtillegg/Lerret.md": "---\naliases: [Tavle]\n---\nLerret (Canvas) er et programtillegg. Canvas.\n",
    "sv/Insticksprogram/Arbetsyta.md": "Arbetsyta (Canvas) är ett insticksprogram för canvas och kort.\n",
    "de/Erweiterungen/Leinwand.md": "Die Leinwand (Canvas) ist eine Erweiterung. Canvas-Karten, Canvas-Gruppen.\n",
    "en/Editing/Keyboard.md": (
        "---\ntitle: Hotkeys\n---\n# Hotkeys\n\n## Keyboard shortcuts\n\nOpen the settings and pick Hotkeys.\n"
        "```sh\n# Keyboard layout\nsetxkbmap us\n```\n"
    ),
    "en/Editing/Tips.md": "Keyboard shortcuts save time: keyboard shortcuts for links, keyboard shortcuts for tags.\n",
    "en/Editing/Layouts.md": "Every keyboard layout works; keyboard layout switching is up to the system.\n",
    "fr/Café au lait.md": "Une note sur le café, le lait et le café au lait du matin.\n",
    "en/Cafe notes.md": "Cafe au lait, cafe latte, cafe crema: cafe au lait is the French one.\n",
    "en/Reviews/2024-review.md": "---\ntitle: Looking back on the year\n---\nWhat went well, what did not.\n",
    "en/Journal/Year.md": "A review of 2024: the 2024 review meeting, review notes, review dates in 2024.\n",
    **{f"Release notes/v1.1.{number}.md": _release_note(number) for number in range(1, 25)},
}


def _write(root: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def paths(hits: list) -> list[str]:
    return [hit.path for hit in hits]


# The same questions with meaning off and on; each names one note, which must come first.
KNOWN = [
    ("Canvas", "en/Plugins/Canvas.md"),  # its file name (and title), crowded by 24 release notes and 3 translations
    ("canvas", "en/Plugins/Canvas.md"),  # case
    ("CANV", "en/Plugins/Canvas.md"),  # the start of it
    ("Hotkeys", "en/Editing/Keyboard.md"),  # the front matter title, not the file name
    ("Keyboard", "en/Editing/Keyboard.md"),  # the file name, not the title
    ("keyboard shortcuts", "en/Editing/Keyboard.md"),  # a heading, where another note repeats the words thrice
    ("Tavle", "no/Programtillegg/Lerret.md"),  # an alias
    ("Lerret", "no/Programtillegg/Lerret.md"),
    ("Leinwand", "de/Erweiterungen/Leinwand.md"),
    ("cafe au lait", "fr/Café au lait.md"),  # without the accent; the other note says "cafe au lait" twice
    ("CAFÉ AU LAIT", "fr/Café au lait.md"),
    ("2024 review", "en/Reviews/2024-review.md"),  # the file name without its hyphen
    ("Looking back on the year", "en/Reviews/2024-review.md"),
]


@pytest.fixture
def words_only(tmp_path: Path) -> Iterator[Vault]:
    _write(tmp_path / "vault", NOTES)
    with Vault(tmp_path / "vault", max_staleness=0) as vault:
        yield vault


@pytest.fixture
def with_meaning(tmp_path: Path) -> Iterator[Vault]:
    _write(tmp_path / "vault", NOTES)
    with Vault(tmp_path / "vault", max_staleness=0, embedder=Counting()) as vault:
        assert vault.wait_for_meaning(WAIT)
        yield vault


@pytest.mark.parametrize(("query", "expected"), KNOWN)
def test_a_notes_name_puts_it_first_by_words(words_only: Vault, query: str, expected: str) -> None:
    assert paths(words_only.search(query, limit=5))[0] == expected


def test_a_notes_name_puts_it_first_by_meaning_too(with_meaning: Vault) -> None:
    wrong = {query: paths(with_meaning.search(query, limit=5))[:1] for query, expected in KNOWN}
    assert wrong == {query: [expected] for query, expected in KNOWN}


def test_the_rest_follow_the_named_note_as_before(words_only: Vault) -> None:
    found = paths(words_only.search("Canvas", limit=10))
    assert found[0] == "en/Plugins/Canvas.md"
    assert len(found) == 10 and len(set(found)) == 10  # the known note once, the keyword hits after it
    assert all(path.startswith(("Release notes/", "no/", "sv/", "de/")) for path in found[1:])


def test_a_title_outranks_notes_that_only_have_it_as_a_heading(words_only: Vault) -> None:
    # Every release note has a "## Canvas" heading; the note called Canvas still comes first, and the
    # heading tier does not push the keyword ranking aside when a title answers.
    assert paths(words_only.search("Canvas", limit=1)) == ["en/Plugins/Canvas.md"]


def test_a_comment_in_a_code_block_is_no_heading(words_only: Vault) -> None:
    assert paths(words_only.search("keyboard layout", limit=5))[0] == "en/Editing/Layouts.md"


def test_a_named_note_is_held_to_the_folder_and_tags_asked_for(words_only: Vault) -> None:
    assert "en/Plugins/Canvas.md" not in paths(words_only.search("Canvas", folder="Release notes"))
    assert paths(words_only.search("Canvas", folder="en"))[0] == "en/Plugins/Canvas.md"
    assert words_only.search("Hotkeys", tags=["nothing-tagged-so"]) == []


def test_a_renamed_or_edited_note_is_known_by_its_new_name_only(words_only: Vault) -> None:
    (words_only.root / "en/Plugins/Canvas.md").rename(words_only.root / "en/Plugins/Whiteboard.md")
    words_only.sync()
    assert paths(words_only.search("Whiteboard"))[0] == "en/Plugins/Whiteboard.md"
    assert "en/Plugins/Canvas.md" not in paths(words_only.search("Canvas", limit=50))
    (words_only.root / "en/Editing/Keyboard.md").write_text("Nothing here now.\n")
    words_only.sync()
    assert paths(words_only.search("Hotkeys")) == []


def test_the_first_builds_partial_index_never_outranks_a_title_or_a_keyword_hit(tmp_path: Path) -> None:
    """The notes embedded first (here: everything but the two asked about) must not crowd out the note the
    question names, nor a note that holds every word of the question and has no vector yet."""
    root = tmp_path / "vault"
    late = {
        "en/Plugins/Canvas.md": NOTES["en/Plugins/Canvas.md"],
        "en/Plugins/Whiteboard.md": "Pin cards and sketches to an endless board beside your notes.\n",
    }
    early = {rel: text for rel, text in NOTES.items() if rel not in late}
    # Close in meaning and holding some of the words, with vectors: before, these won on meaning alone.
    early["en/Cards.md"] = "Pin cards to a board: index cards for notes, sketches of cards, a board of cards.\n"
    early["en/Boards.md"] = "An endless board of sketches and cards, pinned beside each other.\n"
    _write(root, early)
    with Vault(root, embedder=Counting()) as first:
        assert first.wait_for_meaning(WAIT)
    _write(root, late)
    gated = Gated()
    with Vault(root, max_staleness=0, embedder=gated) as building:
        try:
            assert building.wait_for_meaning(WAIT, all_notes=False)
            assert not building.wait_for_meaning(0.1)  # the two late notes wait for their vectors
            assert paths(building.search("Canvas", limit=5))[0] == "en/Plugins/Canvas.md"
            assert paths(building.search("pin cards sketches endless board", limit=5))[0] == "en/Plugins/Whiteboard.md"
        finally:
            gated.gate.set()
        assert building.wait_for_meaning(WAIT)
        assert paths(building.search("Canvas", limit=5))[0] == "en/Plugins/Canvas.md"
