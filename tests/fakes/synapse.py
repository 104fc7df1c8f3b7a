"""A real Matrix homeserver for the tests: Synapse, from PyPI, in a virtualenv of its own.

Synapse pins dependencies of its own (Twisted and many more), so it lives apart from the project's
virtualenv, in ``.venv-synapse`` at the top of the checkout: made once (``python -m
tests.fakes.synapse --install``, which scripts/test runs) and kept across runs. Each homeserver is
one process on 127.0.0.1 with its own SQLite database in a folder of the test's: registration only
through the shared secret (so tests make the accounts they need), no federation, rate limits out of
the way unless a test sets one for an account (:meth:`Synapse.limit_messages`).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-synapse"
VERSION = "1.163.2"
SERVER_NAME = "localhost"
# Every rate limit Synapse has, out of the tests' way (a test that wants a 429 sets one for an account).
_RATE_LIMITS = (
    "rc_message",
    "rc_registration",
    "rc_registration_token_validity",
    "rc_joins_local",
    "rc_joins_remote",
    "rc_joins_per_room",
    "rc_invites_per_room",
    "rc_invites_per_user",
    "rc_invites_per_issuer",
    "rc_admin_redaction",
    "rc_3pid_validation",
    "rc_third_party_invite",
    "rc_media_create",
    "rc_presence_per_user",
    "rc_delayed_event_mgmt",
    "rc_room_creation",
    "rc_reports",
    "rc_login_address",
    "rc_login_account",
    "rc_login_failed_attempts",
    "rc_key_requests",
)


def synapse_python() -> Path:
    """The interpreter of Synapse's virtualenv."""
    return VENV / "bin" / "python"


def installed() -> bool:
    """Whether Synapse's virtualenv holds the version the tests run."""
    marker = VENV / f"synapse-{VERSION}"
    return marker.exists() and synapse_python().exists()


def install() -> None:
    """Make Synapse's virtualenv unless it is there (one process at a time: xdist's workers may race)."""
    if installed():
        return
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(ROOT / ".venv-synapse.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed():
            return
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        pip = [str(synapse_python()), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, f"matrix-synapse=={VERSION}"], check=True)
        (VENV / f"synapse-{VERSION}").touch()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Account:
    """An account registered on the homeserver."""

    user_id: str
    password: str
    access_token: str
    device_id: str


class Synapse:
    """One Synapse process under ``folder`` until :meth:`close` (or the ``with`` block ends)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._secret = secrets.token_hex(16)
        self._process: subprocess.Popen[bytes] | None = None
        self._admin: Account | None = None
        self._names = 0

    def __enter__(self) -> Synapse:
        self.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def start(self, timeout: float = 90.0) -> None:
        """Write the configuration, start Synapse, and return once it answers clients."""
        install()
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "homeserver.yaml"
        config.write_text(json.dumps(self._config()))  # YAML reads JSON
        (self.folder / "log.yaml").write_text(json.dumps(_log_config(self.folder / "homeserver.log")))
        key = self.folder / "signing.key"
        subprocess.run(
            [str(VENV / "bin" / "generate_signing_key"), "-o", str(key)], check=True, capture_output=True
        )
        with open(self.folder / "stderr.log", "wb") as stderr:  # the process keeps its own copy
            self._process = subprocess.Popen(
                [str(synapse_python()), "-m", "synapse.app.homeserver", "--config-path", str(config)],
                cwd=self.folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                # Synapse's own interpreter and packages only: a PYTHONPATH of the test run's would mix them.
                env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"Synapse exited: {(self.folder / 'stderr.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.url}/_matrix/client/versions", timeout=2).close()
                return
            time.sleep(0.1)
        raise RuntimeError(f"Synapse did not answer within {timeout:.0f}s")

    def close(self) -> None:
        """Stop Synapse."""
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def register(self, name: str | None = None, *, admin: bool = False) -> Account:
        """A new account (a fresh name unless ``name`` is given), through the shared secret."""
        if name is None:
            self._names += 1
            name = f"user{self._names}-{secrets.token_hex(3)}"
        password = secrets.token_urlsafe(12)
        endpoint = "/_synapse/admin/v1/register"
        nonce = self.request("GET", endpoint)["nonce"]
        mac = hmac.new(self._secret.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join([nonce.encode(), name.encode(), password.encode(), b"admin" if admin else b"notadmin"]))
        body = {"nonce": nonce, "username": name, "password": password, "admin": admin, "mac": mac.hexdigest()}
        answer = self.request("POST", endpoint, body)
        return Account(answer["user_id"], password, answer["access_token"], answer["device_id"])

    def limit_messages(self, user_id: str, per_second: int, burst: int) -> None:
        """Let ``user_id`` send at most ``burst`` messages at once and ``per_second`` after (429s past it)."""
        if self._admin is None:
            self._admin = self.register(admin=True)
        body = {"messages_per_second": per_second, "burst_count": burst}
        self.request("POST", f"/_synapse/admin/v1/users/{quote(user_id)}/override_ratelimit", body, self._admin)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None, who: Account | None = None) -> Any:
        """One client-server (or admin) API call; the JSON answer."""
        headers = {"Content-Type": "application/json"}
        if who is not None:
            headers["Authorization"] = f"Bearer {who.access_token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: {exc.code} {exc.read()[:500]!r}") from None

    def _config(self) -> dict[str, Any]:
        relaxed = {"per_second": 10000, "burst_count": 100000}
        limits: dict[str, Any] = {name: relaxed for name in _RATE_LIMITS}
        limits["rc_login"] = {"address": relaxed, "account": relaxed, "failed_attempts": relaxed}
        limits["rc_joins"] = {"local": relaxed, "remote": relaxed}
        limits["rc_invites"] = {"per_room": relaxed, "per_user": relaxed, "per_issuer": relaxed}
        return {
            "server_name": SERVER_NAME,
            "pid_file": str(self.folder / "homeserver.pid"),
            "listeners": [
                {
                    "port": self.port,
                    "bind_addresses": ["127.0.0.1"],
                    "type": "http",
                    "tls": False,
                    "x_forwarded": False,
                    "resources": [{"names": ["client"], "compress": False}],
                }
            ],
            "database": {"name": "sqlite3", "args": {"database": str(self.folder / "homeserver.db")}},
            "log_config": str(self.folder / "log.yaml"),
            "media_store_path": str(self.folder / "media"),
            "signing_key_path": str(self.folder / "signing.key"),
            "registration_shared_secret": self._secret,
            "enable_registration": False,
            "report_stats": False,
            "enable_metrics": False,
            "macaroon_secret_key": secrets.token_hex(16),
            "form_secret": secrets.token_hex(16),
            "trusted_key_servers": [],
            "suppress_key_server_warning": True,
            "federation_domain_whitelist": [],
            "presence": {"enabled": False},
            "url_preview_enabled": False,
            "bcrypt_rounds": 4,  # registering and logging in fast: these passwords guard nothing
            **limits,
        }


def _log_config(path: Path) -> dict[str, Any]:
    return {
        "version": 1,
        "formatters": {"plain": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"}},
        "handlers": {"file": {"class": "logging.FileHandler", "filename": str(path), "formatter": "plain"}},
        "root": {"level": "WARNING", "handlers": ["file"]},
        "disable_existing_loggers": False,
    }


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="make Synapse's virtualenv unless it is there")
    if parser.parse_args().install:
        started = time.monotonic()
        was = installed()
        install()
        if not was:
            print(f"Synapse {VERSION} installed in {VENV} in {time.monotonic() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    _main()
