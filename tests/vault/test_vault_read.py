"""Reading notes by path or title, including notes people wrote by hand."""

from __future__ import annotations

import pytest

from vault import InvalidNote, NoteNotFound, Vault


def test_read_with_and_without_suffix(notes: Vault) -> None:
    notes.write("Recipes", "Pancakes", "Flour, milk, eggs.", tags=["food"])

    for path in ("Recipes/Pancakes", "Recipes/Pancakes.md"):
        note = notes.read(path)
        assert (note.path, note.title, note.content.strip()) == (
            "Recipes/Pancakes.md",
            "Pancakes",
            "Flour, milk, eggs.",
        )
        assert note.frontmatter["tags"] == ["food"]


def test_read_by_title_case_insensitively(notes: Vault) -> None:
    notes.write("Recipes/Breakfast", "Pancakes", "Flour.")

    assert notes.read("pancakes").path == "Recipes/Breakfast/Pancakes.md"
    assert notes.read("recipes/breakfast/PANCAKES.md").path == "Recipes/Breakfast/Pancakes.md"


def test_read_by_front_matter_title(notes: Vault) -> None:
    (notes.root / "x1.md").write_text("---\ntitle: Shopping List\n---\nmilk\n", encoding="utf-8")

    note = notes.read("shopping list")
    assert (note.path, note.title, note.content) == ("x1.md", "Shopping List", "milk\n")


def test_not_found_suggests_close_names(notes: Vault) -> None:
    notes.write("Recipes", "Pancakes", "Flour.")

    with pytest.raises(NoteNotFound, match="did you mean 'Recipes/Pancakes.md'"):
        notes.read("Pancake")


def test_not_found_without_suggestions(notes: Vault) -> None:
    with pytest.raises(NoteNotFound) as caught:
        notes.read("zzz")
    assert "did you mean" not in str(caught.value)
    assert str(notes.root) not in str(caught.value)


def test_empty_path_is_invalid(notes: Vault) -> None:
    with pytest.raises(InvalidNote):
        notes.read("  ")


def test_note_without_front_matter_reads_whole(notes: Vault) -> None:
    text = "# Thoughts\n\nJust some text.\n---\nwith a rule.\n"
    (notes.root / "Thoughts.md").write_text(text, encoding="utf-8")

    note = notes.read("Thoughts")
    assert (note.title, note.content, note.frontmatter) == ("Thoughts", text, {})


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: [unclosed\n---\nbody\n",
        "---\n- just\n- a list\n---\nbody\n",
        "---\nno closing line\nbody\n",
    ],
)
def test_invalid_front_matter_keeps_everything(notes: Vault, text: str) -> None:
    (notes.root / "Odd.md").write_text(text, encoding="utf-8")

    note = notes.read("Odd.md")
    assert (note.title, note.content, note.frontmatter) == ("Odd", text, {})


def test_hand_written_dates_are_accepted(notes: Vault) -> None:
    (notes.root / "Dated.md").write_text("---\ncreated: 2024-01-02\ntags: 'a, #b'\n---\nx\n", encoding="utf-8")

    note = notes.read("Dated")
    assert str(note.frontmatter["created"]) == "2024-01-02"
    assert notes.list().notes[0].tags == ["a", "b"]


OBSIDIAN_TEXT = (
    "---\ntitle: Café ☕ plans 🚀\naliases: Coffee\ntags: [food]\ncustom: {nested: [1, 2]}\n---\n"
    "See [[Other note|the other one]] and [[Folder/Deep#Heading]].\n"
    "![[photo 🐈.png]] and ![[Diagram.excalidraw]]\n"
    "- [ ] a task ^block-id\n%% a comment %%\n"
)


def test_obsidian_syntax_and_emoji_names_read_without_loss_and_untouched(notes: Vault) -> None:
    path = notes.root / "Ideas 💡" / "Café ☕.md"
    path.parent.mkdir()
    path.write_bytes(OBSIDIAN_TEXT.encode())
    stat = path.stat()

    note = notes.read("Ideas 💡/Café ☕")
    by_title = notes.read("café ☕ plans 🚀")
    by_alias = notes.read("coffee")
    notes.list("Ideas 💡")
    notes.search("excalidraw")

    assert note.path == by_title.path == by_alias.path == "Ideas 💡/Café ☕.md"
    assert note.title == "Café ☕ plans 🚀"
    assert note.frontmatter["custom"] == {"nested": [1, 2]}
    assert note.content == OBSIDIAN_TEXT.split("---\n", 2)[2]
    assert path.read_bytes() == OBSIDIAN_TEXT.encode()
    assert (path.stat().st_mtime_ns, path.stat().st_size) == (stat.st_mtime_ns, stat.st_size)


@pytest.mark.parametrize(
    ("raw", "title", "content"),
    [
        (b"\xef\xbb\xbf---\ntitle: With BOM\n---\nbody\n", "With BOM", "body\n"),
        (b"---\r\ntitle: Windows\r\n---\r\nbody\r\n", "Windows", "body\r\n"),
        (b"---\ntitle: 12345\n---\nnumeric title\n", "Odd", "numeric title\n"),
        (b"---\n\n---\n", "Odd", ""),
        (b"", "Odd", ""),
    ],
)
def test_odd_front_matter_is_read_and_never_rewritten(notes: Vault, raw: bytes, title: str, content: str) -> None:
    path = notes.root / "Odd.md"
    path.write_bytes(raw)

    note = notes.read("Odd")
    notes.list("")

    assert (note.path, note.title, note.content) == ("Odd.md", title, content)
    assert path.read_bytes() == raw


def test_invalid_utf8_is_read_with_replacement_and_left_alone(notes: Vault) -> None:
    path = notes.root / "Latin1.md"
    path.write_bytes(b"caf\xe9 notes\n")

    assert notes.read("Latin1").content == "caf\ufffd notes\n"
    assert path.read_bytes() == b"caf\xe9 notes\n"


def test_an_alias_given_as_a_single_string_finds_the_note(notes: Vault) -> None:
    (notes.root / "Robert.md").write_text("---\naliases: Bob\n---\nx\n", encoding="utf-8")

    assert notes.read("bob").path == "Robert.md"
