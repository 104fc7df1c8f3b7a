"""What a user trips on at the terminal, through a real `vaultbot chat`: a slash command that does
not exist is answered as unknown and files nothing (a message that merely starts with a slash is
filed as usual), and a message that is a link is filed under a readable name, not the raw address."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli import vaultbot


def test_an_unknown_command_says_so_with_the_help_and_files_nothing(tmp_path: Path) -> None:
    done = vaultbot(tmp_path, "chat", stdin="/bogus\n/Bogus with words\n/bogus-cmd-zz\n")
    assert done.returncode == 0, done.stderr
    first, second, third = done.stdout.split("vaultbot> ")[1:]
    assert first.startswith("I don't know the command /bogus, so I did nothing with that message.")
    assert "/note <text> — file it as a note right away" in first  # the /help text
    assert second.startswith("I don't know the command /bogus,")
    assert third.startswith("I don't know the command /bogus-cmd-zz, so I did nothing with that message.")
    inbox = tmp_path / "data" / "vault" / "Inbox"
    assert not inbox.exists() or list(inbox.iterdir()) == []


def test_a_message_that_only_starts_with_a_path_is_filed_under_a_name_without_a_leading_dash(tmp_path: Path) -> None:
    done = vaultbot(tmp_path, "chat", stdin="/etc/hosts is odd\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("vaultbot> Saved to Inbox/etc-hosts is odd.md")
    assert [p.name for p in (tmp_path / "data" / "vault" / "Inbox").iterdir()] == ["etc-hosts is odd.md"]


def test_a_link_is_filed_under_its_host_and_path_words(tmp_path: Path) -> None:
    done = vaultbot(
        tmp_path,
        "chat",
        stdin="https://example.com/article?x=1\nhttps://www.example.org/blog/my-post.html read later\n",
    )
    assert done.returncode == 0, done.stderr
    inbox = tmp_path / "data" / "vault" / "Inbox"
    assert sorted(p.name for p in inbox.iterdir()) == [
        "example.com article.md",
        "example.org blog my post read later.md",
    ]
    assert "https://example.com/article?x=1" in (inbox / "example.com article.md").read_text()
    assert "Saved to Inbox/example.com article.md" in done.stdout


def test_note_command_names_a_link_the_same_way(tmp_path: Path) -> None:
    done = vaultbot(tmp_path, "chat", stdin="/note https://example.com/article?x=1\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "vaultbot> Saved to Inbox/example.com article.md.\n"
