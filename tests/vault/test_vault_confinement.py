"""Property tests: whatever path a caller gives, nothing is read or written outside the vault."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
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


def sandbox(action: Callable[[Vault, Path], object]) -> None:
    """Run ``action`` on a fresh vault in an otherwise empty folder, with a symlink pointing out,
    and check that nothing appeared outside the vault and that any path it returned is inside."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        outside = base / "outside"
        outside.mkdir()
        (outside / "secret.md").write_text("secret")
        with Vault(base / "vault", max_staleness=0) as notes:
            (notes.root / "link").symlink_to(outside, target_is_directory=True)
            try:
                returned = action(notes, outside)
            except VaultError:
                returned = None
            if isinstance(returned, Path):
                assert returned.resolve().is_relative_to(notes.root)
            if isinstance(returned, str):
                assert (notes.root / returned).resolve().is_relative_to(notes.root)
        assert sorted(p.name for p in base.iterdir()) == ["outside", "vault"]
        assert [p.name for p in outside.iterdir()] == ["secret.md"]
        assert (outside / "secret.md").read_text() == "secret"


@CHECKS
@given(PATHS)
def test_resolve_never_leaves_the_vault(path: str) -> None:
    sandbox(lambda notes, _: notes.resolve(path))


@CHECKS
@given(PATHS)
def test_read_never_reads_outside(path: str) -> None:
    def read(notes: Vault, outside: Path) -> str:
        note = notes.read(path)
        assert "secret" not in note.content
        return note.path

    sandbox(read)


@CHECKS
@given(PATHS, st.text(min_size=1, max_size=40))
def test_write_never_writes_outside(folder: str, title: str) -> None:
    sandbox(lambda notes, _: notes.write(folder, title, "content").path)


@CHECKS
@given(PATHS)
def test_list_never_lists_outside(folder: str) -> None:
    def listing(notes: Vault, outside: Path) -> None:
        result = notes.list(folder)
        assert all(not n.path.startswith("link/") for n in result.notes)

    sandbox(listing)


@CHECKS
@given(PATHS, st.text(max_size=40))
def test_attachments_never_land_outside(folder: str, name: str) -> None:
    sandbox(lambda notes, _: notes.save_attachment(folder, name or "file", b"data"))


@CHECKS
@given(st.text(max_size=40))
def test_search_finds_nothing_behind_a_link_out(query: str) -> None:
    def search(notes: Vault, outside: Path) -> None:
        if query.strip():
            assert all(not hit.path.startswith("link/") for hit in notes.search(query))

    sandbox(search)


def test_the_property_sandbox_catches_an_escape() -> None:
    """The checks above could not pass by accident: an action that writes outside is caught."""
    try:
        sandbox(lambda notes, outside: (outside / "escaped.md").write_text("x"))
    except AssertionError:
        return
    raise AssertionError("the sandbox missed a write outside the vault")


def test_symlinked_folder_is_not_entered(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("the secret")
    with Vault(tmp_path / "vault", max_staleness=0) as notes:
        os.symlink(outside, notes.root / "link")
        assert notes.search("secret") == []
        assert notes.list("").folders == []
