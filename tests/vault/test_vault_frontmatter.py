"""Front matter parsing and rendering."""

from __future__ import annotations

from vault import frontmatter


def test_round_trip_keeps_order_and_unicode() -> None:
    meta = {"title": "Crème brûlée 🍮", "tags": ["food"], "created": "2026-11-22T21:05:03Z"}

    text = frontmatter.render(meta, "Body\n")

    assert text.startswith("---\ntitle: Crème brûlée 🍮\n")
    assert frontmatter.parse(text) == (meta, "Body\n")


def test_empty_meta_renders_body_only() -> None:
    assert frontmatter.render({}, "just text") == "just text\n"


def test_empty_front_matter_block() -> None:
    assert frontmatter.parse("---\n---\nbody") == ({}, "body")


def test_text_without_front_matter_is_all_body() -> None:
    text = "no front matter\n---\nx: 1\n---\n"
    assert frontmatter.parse(text) == ({}, text)
