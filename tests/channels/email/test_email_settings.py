"""The `VAULTBOT_EMAIL__…` settings: on when IMAP_HOST is set, with what must come with it; a bad value is
one line naming the variable, and the password never appears."""

from __future__ import annotations

import pytest

from bot.settings import SettingsError, load_settings

COMPLETE = {
    "VAULTBOT_EMAIL__IMAP_HOST": "imap.example.org",
    "VAULTBOT_EMAIL__SMTP_HOST": "smtp.example.org",
    "VAULTBOT_EMAIL__USERNAME": "bot@example.org",
    "VAULTBOT_EMAIL__PASSWORD": "app-password-Ww4",
    "VAULTBOT_EMAIL__ADDRESS": "Bot@Example.org",
    "VAULTBOT_EMAIL__ALLOWED_SENDERS": '["Ann@Example.com", "ann@example.com", "bob@example.net"]',
    "VAULTBOT_EMAIL__TRUSTED_AUTHSERV_ID": "mx.example.org",
}


def with_env(monkeypatch: pytest.MonkeyPatch, **variables: str) -> None:
    for name, value in {**COMPLETE, **variables}.items():
        monkeypatch.setenv(name, value)


def refusal(monkeypatch: pytest.MonkeyPatch, **variables: str) -> str:
    with_env(monkeypatch, **variables)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert "app-password-Ww4" not in message and "\n" not in message
    return message


def test_the_channel_is_off_until_an_imap_host_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert not settings.email.enabled
    assert (settings.email.imap_port, settings.email.smtp_port) == (993, 465)
    assert (settings.email.imap_security, settings.email.smtp_security) == ("ssl", "ssl")
    assert settings.email.mailbox == "INBOX" and settings.email.require_authenticated


def test_addresses_are_compared_in_lower_case_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    with_env(monkeypatch)
    email = load_settings().email
    assert email.enabled and email.address == "bot@example.org"
    assert email.allowed_senders == ["ann@example.com", "bob@example.net"]
    assert "app-password-Ww4" not in repr(email) + str(email.model_dump())


def test_an_imap_host_alone_names_what_must_come_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    message = refusal(
        monkeypatch, VAULTBOT_EMAIL__SMTP_HOST="", VAULTBOT_EMAIL__PASSWORD="", VAULTBOT_EMAIL__ADDRESS=" "
    )
    assert message == (
        "VAULTBOT_EMAIL__IMAP_HOST is set without VAULTBOT_EMAIL__SMTP_HOST, VAULTBOT_EMAIL__PASSWORD, "
        "VAULTBOT_EMAIL__ADDRESS: set them too"
    )


def test_without_a_trusted_server_authentication_must_be_turned_off_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    message = refusal(monkeypatch, VAULTBOT_EMAIL__TRUSTED_AUTHSERV_ID="")
    assert message.startswith("VAULTBOT_EMAIL__TRUSTED_AUTHSERV_ID is unset")
    assert "VAULTBOT_EMAIL__REQUIRE_AUTHENTICATED=false" in message
    with_env(monkeypatch, VAULTBOT_EMAIL__TRUSTED_AUTHSERV_ID="", VAULTBOT_EMAIL__REQUIRE_AUTHENTICATED="false")
    assert not load_settings().email.require_authenticated


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("VAULTBOT_EMAIL__ALLOWED_SENDERS", "ann@example.com", "expected a JSON list of e-mail addresses"),
        ("VAULTBOT_EMAIL__ALLOWED_SENDERS", '["ann"]', "expected an e-mail address such as ann@example.com"),
        ("VAULTBOT_EMAIL__ALLOWED_SENDERS", '["a@b.c", "<x@y.z>"]', "expected an e-mail address such as ann"),
        ("VAULTBOT_EMAIL__ADDRESS", "bot at example.org", "expected an e-mail address such as ann@example.com"),
        ("VAULTBOT_EMAIL__IMAP_SECURITY", "tls", "expected one of 'ssl', 'starttls' or 'none'"),
        ("VAULTBOT_EMAIL__SMTP_PORT", "70000", "expected a number of at most 65535"),
        ("VAULTBOT_EMAIL__IMAP_PORT", "imaps", "expected a whole number"),
        ("VAULTBOT_EMAIL__MAILBOX", "Inbox\r\nA1 DELETE INBOX", "expected a folder name of printable ASCII"),
        ("VAULTBOT_EMAIL__MAILBOX", "Eingänge", "expected a folder name of printable ASCII"),
        ("VAULTBOT_EMAIL__USERNAME", "bot\x1b@example.org", "expected one line of text"),
        ("VAULTBOT_EMAIL__REQUIRE_AUTHENTICATED", "maybe", "expected true or false"),
        ("VAULTBOT_EMAIL__PASSWORD", "app-password-Ww4\nA2 LOGOUT", "expected one line without NUL characters"),
    ],
)
def test_a_bad_value_is_one_line_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    message = refusal(monkeypatch, **{variable: value})
    assert message.startswith(f"{variable}: {expected}"), message
