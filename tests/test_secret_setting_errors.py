"""No secret appears in a settings error: a bad value of every setting that is or holds a secret
(the API keys, the Telegram token and webhook secret, the review token, an MCP server's ``env`` and
``headers``), read from the environment, from ``.env`` or from the TOML file, stops `vaultbot` with
one line that names the setting and the problem, never the secret. An unknown key of an MCP server
is named with its server and the closest key there is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, SecretStr

from bot.cli import cli
from bot.settings import Settings

SECRET = "sk-live-0123-very-secret-value"
# Parts a line could carry even if it cut the value short.
PIECES = [SECRET, "very-secret", "0123-very"]

# The settings that are secrets, as DESIGN and docs/settings.md name them (a field path each).
SECRETS = {
    ("anthropic_api_key",),
    ("telegram", "token"),
    ("telegram", "webhook_secret"),
    ("review", "token"),
    ("transcribe", "api_key"),
    ("mcp", "servers", "*", "env", "*"),
    ("mcp", "servers", "*", "headers", "*"),
    ("email", "password"),
    ("matrix", "password"),
    ("matrix", "access_token"),
}


def server(**fields: Any) -> str:
    return json.dumps({"files": {"command": "npx", "env": {"TOKEN": SECRET}, **fields}})


def url_server(**fields: Any) -> str:
    return json.dumps({"search": {"url": "http://127.0.0.1:9000/mcp", "headers": {"Authorization": SECRET}, **fields}})


# (case, variable, value, how the line starts): each a bad value with a secret in it or beside it.
VARIABLES = [
    ("token beside a bad value", "VAULTBOT_TELEGRAM", json.dumps({"token": SECRET, "allowed_users": "x"}),
     "VAULTBOT_TELEGRAM (allowed_users): expected a JSON list of numeric user ids, got 'x'"),
    ("token not text", "VAULTBOT_TELEGRAM", json.dumps({"token": [SECRET]}),
     "VAULTBOT_TELEGRAM (token): expected text (the value is not shown: it is a secret)"),
    ("token in broken JSON", "VAULTBOT_TELEGRAM", '{"token": "' + SECRET + '", "allow_groups": tru}',
     "VAULTBOT_TELEGRAM: expected a JSON object of the section's settings; it is not valid JSON (Expecting value "
     "at line 1, column 61) (the value is not shown: it holds secrets)"),
    ("webhook secret of the wrong shape", "VAULTBOT_TELEGRAM__WEBHOOK_SECRET", SECRET + "!",
     "VAULTBOT_TELEGRAM__WEBHOOK_SECRET: must be 16 to 256 characters of A-Z, a-z, 0-9, _ and - "
     "(the value is not shown: it is a secret)"),
    ("review token beside a bad port", "VAULTBOT_REVIEW", json.dumps({"token": SECRET, "port": "eighty"}),
     "VAULTBOT_REVIEW (port): expected a whole number, got 'eighty'"),
    ("review token in broken JSON", "VAULTBOT_REVIEW", '{"token": "' + SECRET + '"',
     "VAULTBOT_REVIEW: expected a JSON object of the section's settings; it is not valid JSON"),
    ("transcription key beside a bad value", "VAULTBOT_TRANSCRIBE", json.dumps({"api_key": SECRET, "attempts": "x"}),
     "VAULTBOT_TRANSCRIBE (attempts): expected a whole number, got 'x'"),
    ("mail password beside a bad port", "VAULTBOT_EMAIL", json.dumps({"password": SECRET, "imap_port": "x"}),
     "VAULTBOT_EMAIL (imap_port): expected a whole number, got 'x'"),
    ("mail password not text", "VAULTBOT_EMAIL", json.dumps({"password": [SECRET]}),
     "VAULTBOT_EMAIL (password): expected text (the value is not shown: it is a secret)"),
    ("matrix password not text", "VAULTBOT_MATRIX", json.dumps({"password": [SECRET]}),
     "VAULTBOT_MATRIX (password): expected text (the value is not shown: it is a secret)"),
    ("matrix token beside a bad id", "VAULTBOT_MATRIX", json.dumps({"access_token": SECRET, "user_id": "ann"}),
     "VAULTBOT_MATRIX (user_id): expected a Matrix user id such as @ann:example.org, got 'ann'"),
    ("transcription key not text", "VAULTBOT_TRANSCRIBE", json.dumps({"api_key": {"k": SECRET}}),
     "VAULTBOT_TRANSCRIBE (api_key): expected text (the value is not shown: it is a secret)"),
    ("mcp: an unknown key", "VAULTBOT_MCP__SERVERS", server(comand="npx"),
     "VAULTBOT_MCP__SERVERS (server 'files'): unknown key 'comand'; did you mean 'command'?"),
    ("mcp: env misspelt", "VAULTBOT_MCP__SERVERS", json.dumps({"files": {"command": "npx", "envv": {"T": SECRET}}}),
     "VAULTBOT_MCP__SERVERS (server 'files'): unknown key 'envv'; did you mean 'env'?"),
    ("mcp: headers on a command server", "VAULTBOT_MCP__SERVERS", server(headers={"X": SECRET}),
     "VAULTBOT_MCP__SERVERS (server 'files'): headers are for a url server; a command server takes env "
     "(the value is not shown: it holds secrets)"),
    ("mcp: env on a url server", "VAULTBOT_MCP__SERVERS", url_server(env={"TOKEN": SECRET}),
     "VAULTBOT_MCP__SERVERS (server 'search'): args and env are for a command server; a url server takes headers "
     "(the value is not shown: it holds secrets)"),
    ("mcp: a bad timeout beside env", "VAULTBOT_MCP__SERVERS", server(timeout="soon"),
     "VAULTBOT_MCP__SERVERS (server 'files', timeout): expected a number, got 'soon'"),
    ("mcp: a bad url beside headers", "VAULTBOT_MCP__SERVERS", url_server(url="ftp://127.0.0.1/mcp"),
     "VAULTBOT_MCP__SERVERS (server 'search', url): expected an http(s) URL such as http://127.0.0.1:9000/mcp, "
     "got 'ftp://127.0.0.1/mcp'"),
    ("mcp: an env value not text", "VAULTBOT_MCP__SERVERS", server(env={"T": [SECRET]}),
     "VAULTBOT_MCP__SERVERS (server 'files', env, T): expected text (the value is not shown: it is a secret)"),
    ("mcp: env not a table", "VAULTBOT_MCP__SERVERS", json.dumps({"files": {"command": "npx", "env": [SECRET]}}),
     "VAULTBOT_MCP__SERVERS (server 'files', env): expected a table of settings (the value is not shown: it holds "
     "secrets)"),
    ("mcp: a server not a table", "VAULTBOT_MCP__SERVERS", json.dumps({"files": SECRET}),
     "VAULTBOT_MCP__SERVERS (server 'files'): expected a table of settings (the value is not shown: it holds "
     "secrets)"),
    ("mcp: servers not a table", "VAULTBOT_MCP__SERVERS", json.dumps([SECRET]),
     "VAULTBOT_MCP__SERVERS: expected a JSON object of MCP servers by name (the value is not shown: it holds "
     "secrets)"),
    ("mcp: a bad server name", "VAULTBOT_MCP__SERVERS",
     json.dumps({"my files": {"command": "x", "env": {"T": SECRET}}}),
     "VAULTBOT_MCP__SERVERS: the server name 'my files' must be 1 to 32 letters, digits or '-' "
     "(the value is not shown: it holds secrets)"),
    ("mcp: broken JSON", "VAULTBOT_MCP__SERVERS", server()[:-1],
     "VAULTBOT_MCP__SERVERS: expected a JSON object of MCP servers by name; it is not valid JSON (Expecting ',' "
     "delimiter at line 1, column 81) (the value is not shown: it holds secrets)"),
    ("mcp: one server in broken JSON", "VAULTBOT_MCP__SERVERS__FILES", '{"command": "npx", "env": {"T": "' + SECRET,
     "VAULTBOT_MCP__SERVERS__FILES: expected a table of settings; it is not valid JSON (Unterminated string"),
    ("mcp: the section in broken JSON", "VAULTBOT_MCP", '{"servers": ' + server(),
     "VAULTBOT_MCP: expected a JSON object of the section's settings; it is not valid JSON (Expecting ',' "
     "delimiter at line 1, column 94) (the value is not shown: it holds secrets)"),
]  # fmt: skip


def doctor(env: dict[str, str]) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["doctor"], env=env, catch_exceptions=False)
    return done.exit_code, done.stderr + done.stdout


def assert_one_line_without_the_secret(code: int, output: str, starts: str) -> None:
    assert code == 2
    assert output.startswith(f"vaultbot: {starts}"), output
    assert output.count("\n") == 1 and output.endswith("\n")
    assert not [piece for piece in PIECES if piece in output], output


@pytest.mark.parametrize(("case", "variable", "value", "starts"), VARIABLES, ids=[v[0] for v in VARIABLES])
def test_a_bad_variable_shows_no_secret(case: str, variable: str, value: str, starts: str) -> None:
    assert_one_line_without_the_secret(*doctor({variable: value}), starts)


@pytest.mark.parametrize(("case", "variable", "value", "starts"), VARIABLES, ids=[v[0] for v in VARIABLES])
def test_a_bad_line_in_dotenv_shows_no_secret(
    tmp_path: Path, case: str, variable: str, value: str, starts: str
) -> None:
    (tmp_path / ".env").write_text(f"{variable}='{value}'\n")
    assert_one_line_without_the_secret(*doctor({}), starts)


TOML = [
    ("sdk key not text", f'anthropic_api_key = ["{SECRET}"]\n',
     "config/vaultbot.toml anthropic_api_key: expected text (the value is not shown: it is a secret)"),
    ("token not text", f'[telegram]\ntoken = {{ value = "{SECRET}" }}\n',
     "config/vaultbot.toml [telegram] token: expected text (the value is not shown: it is a secret)"),
    ("token beside a bad value", f'[telegram]\ntoken = "{SECRET}"\nallowed_users = "me"\n',
     "config/vaultbot.toml [telegram] allowed_users: expected a JSON list of numeric user ids, got 'me'"),
    ("webhook secret of the wrong shape", f'[telegram]\nwebhook_secret = "{SECRET}?"\n',
     "config/vaultbot.toml [telegram] webhook_secret: must be 16 to 256 characters"),
    ("review token not text", f'[review]\ntoken = ["{SECRET}"]\n',
     "config/vaultbot.toml [review] token: expected text (the value is not shown: it is a secret)"),
    ("transcription key not text", f'[transcribe]\napi_key = ["{SECRET}"]\n',
     "config/vaultbot.toml [transcribe] api_key: expected text (the value is not shown: it is a secret)"),
    ("mcp: an unknown key", f'[mcp.servers.files]\ncommand = "npx"\ncomand = "npx"\nenv = {{ T = "{SECRET}" }}\n',
     "config/vaultbot.toml [mcp.servers.files]: unknown key 'comand'; did you mean 'command'?"),
    ("mcp: env misspelt", f'[mcp.servers.files]\ncommand = "npx"\nenvv = {{ T = "{SECRET}" }}\n',
     "config/vaultbot.toml [mcp.servers.files]: unknown key 'envv'; did you mean 'env'?"),
    ("mcp: an unknown key like none", f'[mcp.servers.files]\ncommand = "npx"\nzz = "{SECRET}"\n',
     "config/vaultbot.toml [mcp.servers.files]: unknown key 'zz' (the keys are command, args, env, url, headers, "
     "tools, timeout, start_timeout, trusted)"),
    ("mcp: env not a table", f'[mcp.servers.files]\ncommand = "npx"\nenv = "{SECRET}"\n',
     "config/vaultbot.toml [mcp.servers.files] env: expected a table of settings (the value is not shown: it holds "
     "secrets)"),
    ("mcp: an env value not text", f'[mcp.servers.files]\ncommand = "npx"\nenv = {{ T = ["{SECRET}"] }}\n',
     "config/vaultbot.toml [mcp.servers.files.env] T: expected text (the value is not shown: it is a secret)"),
    ("mcp: headers on a command server", f'[mcp.servers.files]\ncommand = "npx"\nheaders = {{ A = "{SECRET}" }}\n',
     "config/vaultbot.toml [mcp.servers.files]: headers are for a url server; a command server takes env "
     "(the value is not shown: it holds secrets)"),
    ("mcp: a bad timeout beside headers",
     f'[mcp.servers.search]\nurl = "http://127.0.0.1:9/mcp"\ntimeout = "soon"\nheaders = {{ A = "{SECRET}" }}\n',
     "config/vaultbot.toml [mcp.servers.search] timeout: expected a number, got 'soon'"),
    ("mcp: a header value not text",
     f'[mcp.servers.search]\nurl = "http://127.0.0.1:9/mcp"\nheaders = {{ A = {{ B = "{SECRET}" }} }}\n',
     "config/vaultbot.toml [mcp.servers.search.headers] A: expected text (the value is not shown: it is a secret)"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "toml", "starts"), TOML, ids=[t[0] for t in TOML])
def test_a_bad_value_in_the_toml_file_shows_no_secret(tmp_path: Path, case: str, toml: str, starts: str) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "vaultbot.toml").write_text(toml)
    assert_one_line_without_the_secret(*doctor({}), starts)


def secrets_of(kind: Any, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every field path under ``kind`` whose value is a secret (``*`` for a key of the user's own)."""
    if kind is SecretStr:
        return {path}
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return {found for name, f in kind.model_fields.items() for found in secrets_of(f.annotation, (*path, name))}
    args = get_args(kind)
    if get_origin(kind) is dict:
        return secrets_of(args[1], (*path, "*"))
    return {found for arg in args for found in secrets_of(arg, path)}


def test_every_secret_setting_is_among_those_tested() -> None:
    # A new secret setting (an e-mail password) joins SECRETS and gets bad values of its own above.
    assert secrets_of(Settings) <= SECRETS
