"""Confinement: no input may read or write outside the vault; and safe file names."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vault import PathNotAllowed, Vault
from vault.paths import note_stem

# Names Windows reserves for devices, whatever the extension.
RESERVED_NAMES = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}

BIDI_AND_BOM = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff")


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


BAD_PATHS = [
    "../x",
    "../../etc/passwd",
    "/etc/passwd",
    "\\\\server\\share",
    "C:\\x",
    "C:x",
    "a/../../x",
    "a\\..\\..\\x",
    ".obsidian/x",
    ".git/config",
    "notes/.trash/x",
    ".vaultbot/locks",
    "a\x00b",
    "x" * 300,
]


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_write_refuses_bad_folders(notes: Vault, outside: Path, bad: str) -> None:
    with pytest.raises(PathNotAllowed):
        notes.write(bad, "Title", "content")
    assert files_under(outside) == []
    assert list(notes.root.rglob("*.md")) == []


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_read_refuses_bad_paths(notes: Vault, bad: str) -> None:
    with pytest.raises(PathNotAllowed):
        notes.read(bad)


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_list_refuses_bad_folders(notes: Vault, bad: str) -> None:
    with pytest.raises(PathNotAllowed):
        notes.list(bad)


def test_error_names_the_input_and_no_host_path(notes: Vault) -> None:
    with pytest.raises(PathNotAllowed) as caught:
        notes.write("../../etc", "T", "x")
    assert str(caught.value) == "'../../etc' leaves the vault."


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        ("Café/../../x", "'Café/../../x'"),  # printable: as typed
        ("a\nb/../../x", "'a\\nb/../../x'"),  # a newline or escape code cannot break the log line
        ("x" * 70 + "/../../y", "'" + "x" * 59 + "…'"),  # long input cut to 60 characters
        ("x" * 54 + "/../..", "'" + "x" * 54 + "/../..'"),  # exactly 60: kept whole
    ],
)
def test_an_error_quotes_the_input_escaped_and_cut(notes: Vault, bad: str, shown: str) -> None:
    with pytest.raises(PathNotAllowed) as caught:
        notes.list(bad)
    assert str(caught.value) == f"{shown} leaves the vault."


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("a\x00b", "contains a NUL byte"),
        ("/etc/passwd", "is an absolute path"),
        ("C:\\x", "names a drive"),
        (".git/config", "goes into the hidden '.git'"),
        ("x" * 300, "has a name longer than 255 bytes"),
    ],
)
def test_each_refusal_says_why(notes: Vault, bad: str, why: str) -> None:
    with pytest.raises(PathNotAllowed) as caught:
        notes.read(bad)
    assert why in str(caught.value)


def test_a_symlink_loop_is_refused_saying_why(notes: Vault) -> None:
    (notes.root / "a").symlink_to(notes.root / "b", target_is_directory=True)
    (notes.root / "b").symlink_to(notes.root / "a", target_is_directory=True)

    for attempt in (lambda: notes.read("a/x"), lambda: notes.list("a"), lambda: notes.write("a", "T", "x")):
        with pytest.raises(PathNotAllowed) as caught:
            attempt()
        assert "'a" in str(caught.value) and "a symlink on the way loops" in str(caught.value)


def test_a_link_out_or_into_a_hidden_folder_is_refused_saying_where_it_leads(notes: Vault, outside: Path) -> None:
    (notes.root / ".obsidian").mkdir()
    (notes.root / "escape").symlink_to(outside, target_is_directory=True)
    (notes.root / "private").symlink_to(notes.root / ".obsidian", target_is_directory=True)
    (notes.root / "Link.md").symlink_to(outside / "secret.md")

    expected = {
        lambda: notes.read("escape/x"): "'escape/x.md' leads outside the vault through a link.",
        lambda: notes.write("escape/sub", "T", "x"): "'escape/sub' leads outside the vault through a link.",
        lambda: notes.write("", "Link", "x", mode="append"): "'Link.md' leads outside the vault through a link.",
        lambda: notes.read("private/x"): "'private/x.md' leads into a hidden folder through a link.",
        lambda: notes.write("private", "T", "x"): "'private' leads into a hidden folder through a link.",
    }
    for attempt, message in expected.items():
        with pytest.raises(PathNotAllowed) as caught:
            attempt()
        assert str(caught.value) == message
    assert files_under(outside) == []


def test_a_folder_name_of_exactly_255_bytes_is_allowed(notes: Vault) -> None:
    folder = "é" * 127 + "f"  # 255 bytes, as long as Linux, macOS and Windows allow

    result = notes.write(folder, "T", "kept")

    assert result.path == f"{folder}/T.md"
    assert notes.read(result.path).content.strip() == "kept"


def test_symlinked_folder_pointing_out_is_refused(notes: Vault, outside: Path) -> None:
    (outside / "secret.md").write_text("secret", encoding="utf-8")
    (notes.root / "escape").symlink_to(outside, target_is_directory=True)

    with pytest.raises(PathNotAllowed):
        notes.write("escape", "T", "x")
    with pytest.raises(PathNotAllowed):
        notes.write("escape/sub", "T", "x")
    with pytest.raises(PathNotAllowed):
        notes.read("escape/secret")
    with pytest.raises(PathNotAllowed):
        notes.list("escape")
    assert files_under(outside) == ["secret.md"]


def test_a_symlink_out_found_by_another_case_of_its_name_is_refused(notes: Vault, outside: Path) -> None:
    # "ESCAPE" finds the folder "escape" as macOS and Windows would; that it is a link must still count.
    (notes.root / "escape").symlink_to(outside, target_is_directory=True)

    for folder in ("ESCAPE", "Escape/sub", "escape?"):
        with pytest.raises(PathNotAllowed):
            notes.write(folder, "T", "x")
    assert files_under(outside) == []
    assert notes.list("").folders == []
    assert notes.search("secret") == []


def test_symlinked_note_pointing_out_is_refused(notes: Vault, outside: Path) -> None:
    (outside / "secret.md").write_text("secret", encoding="utf-8")
    (notes.root / "Link.md").symlink_to(outside / "secret.md")

    with pytest.raises(PathNotAllowed):
        notes.read("Link")
    for mode in ("create", "append", "replace"):
        with pytest.raises(PathNotAllowed):
            notes.write("", "Link", "more", mode=mode)
    assert (outside / "secret.md").read_text(encoding="utf-8") == "secret"
    assert notes.list().notes == []


def test_symlink_inside_the_vault_is_allowed(notes: Vault) -> None:
    notes.write("Real", "A", "a")
    (notes.root / "Alias").symlink_to(notes.root / "Real", target_is_directory=True)

    assert notes.read("Alias/A").content.strip() == "a"


def test_dot_components_and_whitespace_are_harmless(notes: Vault) -> None:
    result = notes.write(" ./Inbox/ ", "T", "x")

    assert result.path == "Inbox/T.md"
    assert notes.resolve("") == notes.root


@pytest.mark.parametrize(
    ("title", "stem"),
    [
        ('a<b>c:d"e|f?g*h', "a b c d e f g h"),
        ("2024/01\\05", "2024-01-05"),
        ("[[Link]] #tag ^block", "Link tag block"),
        ("tab\there\nnewline", "tab here newline"),
        ("Café ☕ 🚀 notes", "Café ☕ 🚀 notes"),
        ("CON", "CON_"),
        ("nul.txt", "nul_.txt"),
        ("com1", "com1_"),
        ("Console", "Console"),
        (".hidden", "hidden"),
        # A leading dash would read as an option to the commands a person runs on the file.
        ("/bogus-cmd-zz", "bogus-cmd-zz"),
        ("--force", "force"),
        ("- [ ] buy milk", "buy milk"),
        (". -.-x", "x"),
        ("-5 °C at night", "5 °C at night"),
        ("...", "Untitled"),
        ("  trailing dots.. ", "trailing dots"),
        ("???", "Untitled"),
        ("Xmas eXtra X", "Xmas eXtra X"),
        # A cut name drops the dot or space it ends on (Windows would), and nothing else.
        ("a" * 246 + ". b", "a" * 246),
        ("X" * 300, "X" * 248),
    ],
)
def test_file_names_from_titles(title: str, stem: str) -> None:
    assert note_stem(title) == stem


@pytest.mark.parametrize("title", ["a" * 400, "é" * 300, "🚀" * 100])
def test_long_titles_fit_in_a_file_name(notes: Vault, title: str) -> None:
    stem = note_stem(title)
    assert len(f"{stem} 999.md".encode()) <= 255
    assert title.startswith(stem)

    first = notes.write("", title, "one")
    second = notes.write("", title, "two")
    assert second.renamed
    assert all(len(Path(r.path).name.encode()) <= 255 for r in (first, second))


# 1 + 2n bytes, 2 + 4n bytes: the cut at 248 bytes (255 less ".md" and " 999") falls inside a character.
@pytest.mark.parametrize("title", ["a" + "é" * 200, "ab" + "🚀" * 70, "a" + "я" * 200])
def test_a_long_title_cut_inside_a_character_still_files_the_note(notes: Vault, title: str) -> None:
    assert title.encode()[:248].decode("utf-8", errors="replace").endswith("\ufffd")

    result = notes.write("", title, "kept")

    name = Path(result.path).name
    assert len(name.encode()) <= 255 and title.startswith(name.removesuffix(".md"))
    assert notes.read(result.path).content.strip() == "kept"


@pytest.mark.parametrize(
    ("title", "stem"),
    [
        ("\u202efdp.exe", "fdp.exe"),  # shown as "exe.pdf" if kept
        ("invoice\u202egpj.exe", "invoicegpj.exe"),
        ("\u2066left\u2069 \u200fmark\u200e", "left mark"),
        ("\ufeffBOM first", "BOM first"),
        ("C1\x85control\x9b", "C1 control"),
    ],
)
def test_text_direction_and_other_invisible_characters_are_not_in_file_names(
    notes: Vault, title: str, stem: str
) -> None:
    assert note_stem(title) == stem
    assert notes.write("", title, "x").path == f"{stem}.md"


def test_leading_dot_title_is_not_hidden(notes: Vault) -> None:
    result = notes.write("", ".env", "not hidden")

    assert result.path == "env.md"
    assert [n.path for n in notes.list().notes] == ["env.md"]


@pytest.mark.parametrize("hidden", [".obsidian", ".git", ".trash"])
def test_a_symlink_inside_the_vault_into_a_hidden_folder_is_refused(notes: Vault, hidden: str) -> None:
    private = notes.root / hidden
    private.mkdir()
    (private / "config.md").write_text("private settings", encoding="utf-8")
    (notes.root / "Settings").symlink_to(private, target_is_directory=True)
    (notes.root / "Config.md").symlink_to(private / "config.md")

    for folder in ("Settings", "Settings/sub"):
        with pytest.raises(PathNotAllowed):
            notes.write(folder, "T", "x")
    with pytest.raises(PathNotAllowed):
        notes.read("Settings/config")
    with pytest.raises(PathNotAllowed):
        notes.read("Config")
    with pytest.raises(PathNotAllowed):
        notes.list("Settings")
    for mode in ("create", "append", "replace"):
        with pytest.raises(PathNotAllowed):
            notes.write("", "Config", "overwritten", mode=mode)
    with pytest.raises(PathNotAllowed):
        notes.save_attachment("Settings", "a.png", b"png")
    assert sorted(p.name for p in private.iterdir()) == ["config.md"]
    assert (private / "config.md").read_text(encoding="utf-8") == "private settings"
    assert notes.search("private") == []
    assert notes.list().notes == [] and notes.list().folders == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
@example("CON")
@example("nul.txt")
@example("Aux.md")
@example("lpt9")
@example("trailing dots...")
@example("trailing spaces   ")
@example(". .")
@example("../../etc/passwd")
@example("..\\..\\x")
@example("a\x00b")
@example(".obsidian")
@example("x" * 300)
@example("é" * 200)
@example("🚀" * 80)
@example("\u2024\u2024\u2215etc")
@example("\u202efdp.exe")
@example("a" + "é" * 200)
@example("ab" + "🚀" * 70)
@example("\u2067x\u2069\ufeff\x85")
@example("-rf")
@example("/-x")
@example(" - .-")
def test_every_title_gets_a_file_name_every_system_accepts(title: str) -> None:
    stem = note_stem(title)
    assert stem and stem == stem.strip(" .") and not stem.startswith((".", "-"))
    # Windows forbids these and control characters; Obsidian's links break on # ^ [ ].
    assert not set(stem) & set('/\\<>:"|?*#^[]\x7f') and all(ord(c) >= 0x20 for c in stem)
    # Nothing invisible that changes how the name reads (text-direction controls, C1 controls, BOM).
    assert not [c for c in stem if unicodedata.category(c) == "Cc" or c in BIDI_AND_BOM]
    assert stem.partition(".")[0].strip().upper() not in RESERVED_NAMES
    assert len(f"{stem} 999.md".encode()) <= 255


def test_a_note_or_folder_that_is_a_symlink_loop_is_passed_over_and_the_rest_is_served(tmp_path: Path) -> None:
    # One odd link in a person's folder must not stop the vault opening, listing or searching.
    root = tmp_path / "vault"
    root.mkdir()
    (root / "kept.md").write_text("the rest is served")
    (root / "loop.md").symlink_to(root / "loop.md")
    (root / "Ring").symlink_to(root / "Ring", target_is_directory=True)
    notes = Vault(root)
    try:
        listing = notes.list("")
        assert [n.path for n in listing.notes] == ["kept.md"] and listing.folders == []
        assert [hit.path for hit in notes.search("served")] == ["kept.md"]
    finally:
        notes.close()
