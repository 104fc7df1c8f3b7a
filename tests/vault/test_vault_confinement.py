"""Property tests: whatever path a caller gives, nothing is read or written outside the vault or
inside its hidden folders. Each keeps its random search and runs the known hostile inputs every time."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vault import Vault, VaultError

# Pieces that path attacks are made of, mixed with arbitrary text.
PIECES = st.sampled_from(
    [
        "..",
        ".",
        "/",
        "\\",
        "C:",
        "c:\\",
        "\x00",
        ".obsidian",
        ".git",
        ".trash",
        ".vaultbot",
        "~",
        "%2e%2e",
        "link",
        "x" * 300,
    ]
)
PATHS = st.lists(st.one_of(PIECES, st.text(max_size=12)), max_size=6).map("/".join) | st.text(max_size=60)

CHECKS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Known attacks and odd names, tried on every run whatever the random search picks.
HOSTILE = [
    "../../etc/passwd",
    "..",
    "../outside/secret",
    "a/../../outside",
    "./../x",
    "/etc/passwd",
    "//etc/passwd",
    "..\\..\\x",
    "a\\..\\..\\outside",
    "\\\\server\\share",
    "C:\\Windows\\win.ini",
    "c:x",
    "~/x",
    "%2e%2e/%2e%2e/outside",
    "a\x00b",
    "\x00",
    "../\x00",
    ".obsidian/x",
    ".obsidian",
    ".git/config",
    ".git/hooks/pre-commit",
    ".trash/",
    "notes/.trash/x",
    ".vaultbot/index.db",
    " ../x",
    ".. /x",
    "x" * 300,
    "é" * 200,
    "a/" * 100,
    "CON",
    "nul.txt",
    "Aux/COM1.md",
    "trailing. ",
    "dots...",
    "   ",
    "\u2024\u2024/outside",  # one-dot leaders that look like ".."
    "\uff0e\uff0e/outside",  # full-width full stops
    "\u2215etc\u2215passwd",  # a division slash that looks like "/"
    "\u202eexe.md",  # right-to-left override
    "link",
    "link/secret",
    "link/sub/x",
    "Settings/private",
]


def hostile_examples(
    *arguments: Callable[[str], tuple[str, ...]],
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add an ``@example`` for each hostile input, placed in the test's arguments by each of ``arguments``."""

    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        for place in arguments:
            for hostile in HOSTILE:
                test = example(*place(hostile))(test)
        return test

    return decorate


# Hundreds of throwaway vaults per test: on a memory file system an fsync costs nothing, and
# what is under test here is paths, not durability.
_SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def sandbox(action: Callable[[Vault, Path], object]) -> None:
    """Run ``action`` on a fresh vault in an otherwise empty folder, with a symlink pointing out,
    and check that nothing appeared outside the vault and that any path it returned is inside."""
    with tempfile.TemporaryDirectory(dir=_SCRATCH) as tmp:
        base = Path(tmp)
        outside = base / "outside"
        outside.mkdir()
        (outside / "secret.md").write_text("secret")
        with Vault(base / "vault", max_staleness=0) as notes:
            (notes.root / "link").symlink_to(outside, target_is_directory=True)
            hidden = {notes.root / ".obsidian" / "private.md", notes.root / ".git" / "config"}
            for path in hidden:
                path.parent.mkdir()
                path.write_text("secret")
            (notes.root / "Settings").symlink_to(notes.root / ".obsidian", target_is_directory=True)
            try:
                returned = action(notes, outside)
            except VaultError:
                returned = None
            if isinstance(returned, Path):
                assert returned.resolve().is_relative_to(notes.root)
            if isinstance(returned, str):
                assert _visible(notes.root, (notes.root / returned).resolve())
            assert {p for p in notes.root.rglob("*") if p.is_file() and not _visible(notes.root, p)} == hidden
            assert all(p.read_text() == "secret" for p in hidden)
        assert sorted(p.name for p in base.iterdir()) == ["outside", "vault"]
        assert [p.name for p in outside.iterdir()] == ["secret.md"]
        assert (outside / "secret.md").read_text() == "secret"


def _visible(root: Path, path: Path) -> bool:
    """Inside the vault and outside its hidden folders (vaultbot's own ``.vaultbot`` aside)."""
    if not path.is_relative_to(root):
        return False
    parts = path.relative_to(root).parts
    return parts[:1] == (".vaultbot",) or not any(part.startswith(".") for part in parts)


@CHECKS
@given(PATHS)
@hostile_examples(lambda h: (h,))
def test_resolve_never_leaves_the_vault(path: str) -> None:
    sandbox(lambda notes, _: notes.resolve(path))


@CHECKS
@given(PATHS)
@hostile_examples(lambda h: (h,))
def test_read_never_reads_outside(path: str) -> None:
    def read(notes: Vault, outside: Path) -> str:
        note = notes.read(path)
        assert "secret" not in note.content
        return note.path

    sandbox(read)


@CHECKS
@given(PATHS, st.text(min_size=1, max_size=40))
@hostile_examples(lambda h: (h, "title"), lambda h: ("Inbox", h))
def test_write_never_writes_outside(folder: str, title: str) -> None:
    sandbox(lambda notes, _: notes.write(folder, title, "content").path)


@CHECKS
@given(PATHS)
@hostile_examples(lambda h: (h,))
def test_list_never_lists_outside(folder: str) -> None:
    def listing(notes: Vault, outside: Path) -> None:
        result = notes.list(folder)
        assert all(not n.path.startswith(("link/", "Settings/")) for n in result.notes)

    sandbox(listing)


@CHECKS
@given(PATHS, st.text(max_size=40))
@hostile_examples(lambda h: (h, "file.png"), lambda h: ("Attachments", h))
def test_attachments_never_land_outside(folder: str, name: str) -> None:
    sandbox(lambda notes, _: notes.save_attachment(folder, name or "file", b"data"))


@CHECKS
@given(st.text(max_size=40))
@hostile_examples(lambda h: (h,), lambda h: ("secret " + h,))
def test_search_finds_nothing_behind_a_link_out(query: str) -> None:
    def search(notes: Vault, outside: Path) -> None:
        if query.strip():
            assert all(_visible(notes.root, (notes.root / hit.path).resolve()) for hit in notes.search(query))

    sandbox(search)


def test_the_property_sandbox_catches_an_escape() -> None:
    """The checks above could not pass by accident: an action that writes outside is caught."""
    try:
        sandbox(lambda notes, outside: (outside / "escaped.md").write_text("x"))
    except AssertionError:
        return
    raise AssertionError("the sandbox missed a write outside the vault")


def test_the_property_sandbox_catches_a_write_into_a_hidden_folder() -> None:
    try:
        sandbox(lambda notes, outside: (notes.root / "Settings" / "workspace.md").write_text("x"))
    except AssertionError:
        return
    raise AssertionError("the sandbox missed a write into .obsidian")


def test_symlinked_folder_is_not_entered(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("the secret")
    with Vault(tmp_path / "vault", max_staleness=0) as notes:
        os.symlink(outside, notes.root / "link")
        assert notes.search("secret") == []
        assert notes.list("").folders == []
