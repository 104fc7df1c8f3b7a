"""A real SMTP server for the e-mail tests: aiosmtpd on 127.0.0.1 (a free port), in a thread of its
own, that keeps every mail it accepts. It asks for a login (AUTH PLAIN or LOGIN, allowed without TLS on
loopback; the bot's account and password by default, as one mail account serves IMAP and SMTP) and can be
told to answer the next mails with a temporary failure.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from types import TracebackType
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.fakes.dovecot import BOT, PASSWORD, free_port


@dataclass(frozen=True)
class Received:
    """One mail as the server got it: the envelope and the message."""

    sender: str
    recipients: list[str]
    message: EmailMessage
    at: float  # time.monotonic()

    @property
    def text(self) -> str:
        """The plain-text part, as a mail client shows it (line ends as "\n")."""
        part = self.message.get_body(preferencelist=("plain",))
        assert part is not None
        return str(part.get_content()).replace("\r\n", "\n").strip()


class RecordingSmtp:
    """Start with ``with RecordingSmtp() as smtp:``; ``smtp.received`` holds what it accepted."""

    def __init__(
        self, users: dict[str, str] | None = None, *, tls: ssl.SSLContext | None = None, starttls: bool = False
    ) -> None:
        """With ``tls``, the server speaks TLS from the start, or with ``starttls`` offers STARTTLS and
        asks for it before a login."""
        self.users = users or {BOT: PASSWORD}
        self.port = free_port()
        self.received: list[Received] = []
        self.logins: list[str] = []
        self.fail_next = 0  # answer this many mails with 451
        self._changed = threading.Condition()
        self._controller = Controller(
            self,
            hostname="127.0.0.1",
            port=self.port,
            authenticator=self._authenticate,
            auth_require_tls=starttls,
            ssl_context=tls if not starttls else None,
            tls_context=tls if starttls else None,
            require_starttls=starttls,
        )

    def __enter__(self) -> RecordingSmtp:
        self._controller.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._controller.stop()

    def _authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        if isinstance(data, LoginPassword):
            user, password = data.login.decode(), data.password.decode()
            if self.users.get(user) == password:
                self.logins.append(user)
                return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.fail_next:
            self.fail_next -= 1
            return "451 4.3.0 try again later"
        message = BytesParser(policy=policy.default).parsebytes(envelope.content)
        assert isinstance(message, EmailMessage)
        with self._changed:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message, time.monotonic()))
            self._changed.notify_all()
        return "250 OK"

    def wait_for(self, condition: Callable[[list[Received]], bool], timeout: float = 30, what: str = "") -> None:
        """Block until ``condition(received)`` holds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self.received):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what or 'mail'}; received {len(self.received)}")
                self._changed.wait(left)

    def wait_count(self, count: int, timeout: float = 30) -> list[Received]:
        """Block until at least ``count`` mails have come; all of them."""
        self.wait_for(lambda received: len(received) >= count, timeout, f"{count} mail(s)")
        return list(self.received)
