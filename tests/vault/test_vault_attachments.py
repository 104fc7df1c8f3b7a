"""What an attachment's file is called."""

from __future__ import annotations

import pytest

from vault import Vault


@pytest.mark.parametrize(
    ("name", "saved"),
    [
        ("voice", "Voice/voice"),
        ("photo.JPG", "Voice/photo.jpg"),
        ("notes.tar.gz", "Voice/notes.tar.gz"),
        ("weird.ex e", "Voice/weird.ex e"),
        (".jpg", "Voice/attachment.jpg"),
    ],
)
def test_an_attachment_keeps_its_name_and_only_a_plain_extension_is_treated_as_one(
    notes: Vault, name: str, saved: str
) -> None:
    # No extension is made up (Obsidian embeds by extension) and no name ends in "." (Windows cannot hold it).
    assert notes.save_attachment("Voice", name, b"data") == saved
    assert (notes.root / saved).read_bytes() == b"data"
