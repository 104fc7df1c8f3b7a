"""A real IMAP server for the e-mail tests: Debian's Dovecot, started unprivileged on 127.0.0.1 (a free
port) with a configuration, users and mail of its own in a fresh folder, plain login over loopback.

Run as root (CI), it runs as the ``dovecot`` user the package creates, in a folder that user owns;
run as anyone else, as that user. ``idle=False`` takes IDLE out of what it offers, for the polling path;
``tls`` (a trustme certificate for 127.0.0.1) turns on STARTTLS on :attr:`port` and implicit TLS on
:attr:`tls_port`.
Tests put mail in with IMAP APPEND, as a mail server's delivery would, and read the flags back.
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

BOT = "bot@example.org"
PASSWORD = "imap-secret-Kx8"
DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"
# What Dovecot offers after login, less IDLE (and before it, where it says the same).
WITHOUT_IDLE = "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE SORT THREAD=REFERENCES MULTIAPPEND UNSELECT UIDPLUS"

CONFIG = """\
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
protocols = imap
listen = 127.0.0.1
{ssl}
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {user}
default_internal_group = {group}
default_login_user = {user}
first_valid_uid = 1
mail_location = maildir:{root}/mail/%u
{capability}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/home/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {tls_port}
  }}
}}
service anvil {{
  chroot =
}}
"""


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Dovecot:
    """One Dovecot on its own port; :meth:`start`, :meth:`stop`, :meth:`restart` (same port, same mail)."""

    def __init__(self, *, idle: bool = True, users: dict[str, str] | None = None, tls: Any = None) -> None:
        if not Path(DOVECOT).exists():
            raise RuntimeError("Dovecot is missing: scripts/test installs it (apt-get install -y dovecot-imapd)")
        self.users = users or {BOT: PASSWORD}
        self.port = free_port()
        self.tls_port = free_port() if tls is not None else 0
        as_root = os.geteuid() == 0
        account = pwd.getpwnam("dovecot") if as_root else pwd.getpwuid(os.geteuid())
        self._uid, self._gid = account.pw_uid, account.pw_gid
        self.root = Path(tempfile.mkdtemp(prefix="vaultbot-dovecot-"))
        for folder in ("run", "state", "mail", "home"):
            (self.root / folder).mkdir()
        ssl = "ssl = no"
        if tls is not None:
            tls.cert_chain_pems[0].write_to_path(str(self.root / "cert.pem"))
            tls.private_key_pem.write_to_path(str(self.root / "key.pem"))
            ssl = f"ssl = yes\nssl_cert = <{self.root}/cert.pem\nssl_key = <{self.root}/key.pem"
        (self.root / "passwd").write_text("".join(f"{user}:{{PLAIN}}{pw}\n" for user, pw in self.users.items()))
        (self.root / "dovecot.conf").write_text(
            CONFIG.format(
                root=self.root,
                user=account.pw_name,
                group=account.pw_name if as_root else _group_name(account.pw_gid),
                uid=self._uid,
                gid=self._gid,
                port=self.port,
                capability="" if idle else f"imap_capability = {WITHOUT_IDLE}",
                ssl=ssl,
                tls_port=self.tls_port,
            )
        )
        if as_root:
            for path in [self.root, *self.root.rglob("*")]:
                os.chown(path, self._uid, self._gid)
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Dovecot:
        self.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def start(self, timeout: float = 30.0) -> None:
        """Start it and return once it greets an IMAP client."""
        self._process = subprocess.Popen(
            [DOVECOT, "-F", "-c", str(self.root / "dovecot.conf")],
            preexec_fn=self._as_dovecot if os.geteuid() == 0 else None,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while not self._greets():
            if self._process.poll() is not None:
                raise RuntimeError(f"Dovecot exited ({self._process.returncode}): {self.log()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Dovecot did not start within {timeout}s: {self.log()}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop it, with every process it started (its connections close)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        # Its children (one imap process per session) end with it; wait until none listens.
        deadline = time.monotonic() + 10
        while self._greets() and time.monotonic() < deadline:
            time.sleep(0.02)

    def restart(self) -> None:
        """Stop and start again on the same port, with the same mail."""
        self.stop()
        self.start()

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def _as_dovecot(self) -> None:
        os.setgroups([])
        os.setgid(self._gid)
        os.setuid(self._uid)

    def _greets(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as connection:
                return connection.recv(64).startswith(b"* OK")
        except OSError:
            return False

    # --- what a mail server and a person's mail client would do ----------------------------------

    @contextlib.contextmanager
    def session(self, user: str = BOT) -> imaplib.IMAP4:  # type: ignore[misc]
        client = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        try:
            client.login(user, self.users[user])
            yield client
        finally:
            with contextlib.suppress(Exception):
                client.logout()

    def deliver(self, raw: bytes, user: str = BOT, mailbox: str = "INBOX") -> int:
        """Put a mail in the mailbox (unseen); its UID."""
        with self.session(user) as client:
            client.create(mailbox)  # refused (harmless) when it exists
            status, data = client.append(mailbox, None, None, raw)
            assert status == "OK", data
            match = re.search(rb"APPENDUID \d+ (\d+)", data[0] or b"")
            assert match, data
            return int(match.group(1))

    def flags(self, user: str = BOT, mailbox: str = "INBOX") -> dict[int, set[str]]:
        """Every mail's flags, by UID."""
        with self.session(user) as client:
            client.select(mailbox, readonly=True)
            status, data = client.uid("FETCH", "1:*", "(UID FLAGS)")
            found: dict[int, set[str]] = {}
            for line in data:
                if isinstance(line, bytes) and (match := re.search(rb"UID (\d+) FLAGS \(([^)]*)\)", line)):
                    found[int(match.group(1))] = set(match.group(2).decode().split())
            return found

    def unseen(self, user: str = BOT, mailbox: str = "INBOX") -> list[int]:
        """The UIDs not flagged \\Seen."""
        return sorted(uid for uid, flags in self.flags(user, mailbox).items() if "\\Seen" not in flags)


def _group_name(gid: int) -> str:
    import grp

    return grp.getgrgid(gid).gr_name
