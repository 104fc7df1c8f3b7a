"""A local fake of the Telegram Bot API on 127.0.0.1, for driving the real python-telegram-bot.

Point ptb at it with ``Bot(TOKEN, base_url=fake.base_url, base_file_url=fake.base_file_url)`` (or
the same two calls on ``ApplicationBuilder``). ptb posts ``{base_url}{token}/{method}`` with form
fields (``application/x-www-form-urlencoded``, or ``multipart/form-data`` when uploading files):
string values are sent raw, every other value JSON-encoded. The fake decodes each value with
``json.loads`` when it parses, except for fields that are always strings (``text``, ``caption``...).

Script it: ``push_update`` (with the ``*_update`` builders below) feeds ``getUpdates`` with real
offset / long-poll semantics, conflicts included: as Telegram's server does, a ``getUpdates`` that
will wait ends the one already waiting with 409 Conflict, at once if no conflict was answered in
the last ``conflict_pause`` seconds, else after that pause (two pollers of one token take turns
ending each other). ``add_file`` registers downloads; ``fail_next``, ``reject_entities`` and
``conflict`` (every ``getUpdates`` answered 409) inject errors. Every call lands in ``requests``;
``sent``, ``edits``, ``drafts``, ``actions``, ``commands`` and ``menu_buttons`` summarise the outgoing
side (a sent message's ``reply_markup`` included), ``downloads`` the files fetched. ``wait_for`` /
``await_for`` block until a predicate of the fake holds; ``hold`` keeps a call on the wire until released.
"""

from __future__ import annotations

import asyncio
import email.parser
import email.policy
import html
import itertools
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.fakes.local_http import LocalServer

DEFAULT_TOKEN = "123456:TEST-token"

BOT_USER: dict[str, Any] = {
    "id": 999,
    "is_bot": True,
    "first_name": "VaultBot",
    "username": "vault_test_bot",
    "can_join_groups": True,
    "can_read_all_group_messages": False,
    "supports_inline_queries": False,
    "can_connect_to_business": False,
    "has_main_web_app": False,
}

MAX_MESSAGE_LENGTH = 4096  # UTF-16 code units, as Telegram counts them
CANT_PARSE_ENTITIES = "Bad Request: can't parse entities: Unsupported start tag"
CONFLICT = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)

# Parameters that are strings in the Bot API: never JSON-decode them (a text of "42" stays "42").
_STRING_FIELDS = frozenset(
    {
        "text",
        "caption",
        "parse_mode",
        "action",
        "file_id",
        "url",
        "secret_token",
        "description",
        "short_description",
        "name",
        "emoji",
        "title",
        "callback_query_id",
        "inline_message_id",
        "business_connection_id",
        "message_effect_id",
    }
)

_message_ids = itertools.count(1000)


def utf16_len(text: str) -> int:
    """Length as Telegram measures it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


# --------------------------------------------------------------------------- update builders


def _chat(chat_id: int, chat_type: str, first_name: str) -> dict[str, Any]:
    if chat_type == "private":
        return {"id": chat_id, "type": "private", "first_name": first_name}
    return {"id": chat_id, "type": chat_type, "title": "Test Group"}


def _message(
    user_id: int = 42,
    chat_id: int | None = None,
    message_id: int | None = None,
    first_name: str = "Ann",
    chat_type: str = "private",
    reply_to: dict[str, Any] | None = None,
    forward_origin: dict[str, Any] | None = None,
) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "message_id": next(_message_ids) if message_id is None else message_id,
        "date": int(time.time()),
        "chat": _chat(user_id if chat_id is None else chat_id, chat_type, first_name),
        "from": {"id": user_id, "is_bot": False, "first_name": first_name},
    }
    if reply_to is not None:
        msg["reply_to_message"] = reply_to
    if forward_origin is not None:
        msg["forward_origin"] = forward_origin
    return msg


def _command_entities(text: str) -> list[dict[str, Any]] | None:
    """What a Telegram client attaches to a message starting with ``/command``."""
    match = re.match(r"/\S+", text)
    if not match:
        return None
    return [{"type": "bot_command", "offset": 0, "length": utf16_len(match.group())}]


def bot_message(
    text: str, chat_id: int = 42, chat_type: str = "private", message_id: int | None = None
) -> dict[str, Any]:
    """A message the bot sent, to reply to (``reply_to=bot_message(...)``)."""
    msg = _message(user_id=BOT_USER["id"], chat_id=chat_id, message_id=message_id, chat_type=chat_type)
    msg["from"] = dict(BOT_USER)
    msg["text"] = text
    return msg


def text_update(
    text: str,
    user_id: int = 42,
    chat_id: int | None = None,
    message_id: int | None = None,
    first_name: str = "Ann",
    chat_type: str = "private",
    reply_to: dict[str, Any] | None = None,
    forward_origin: dict[str, Any] | None = None,
    entities: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An update with a text ``message``. A leading ``/cmd`` gets a ``bot_command`` entity unless
    ``entities`` is given (pass ``[]`` for none)."""
    msg = _message(user_id, chat_id, message_id, first_name, chat_type, reply_to, forward_origin)
    msg["text"] = text
    ents = _command_entities(text) if entities is None else entities
    if ents:
        msg["entities"] = ents
    return {"message": msg}


def tap_update(
    data: str,
    message: dict[str, Any],
    user_id: int = 42,
    first_name: str = "Ann",
    query_id: str | None = None,
) -> dict[str, Any]:
    """A ``callback_query`` update: the person tapped an inline button with ``data`` under ``message``
    (a message the bot sent, as :meth:`FakeTelegram.message` returns it)."""
    return {
        "callback_query": {
            "id": query_id or f"cq{next(_message_ids)}",
            "from": {"id": user_id, "is_bot": False, "first_name": first_name},
            "chat_instance": "ci-1",
            "message": message,
            "data": data,
        }
    }


def edited_text_update(
    text: str,
    user_id: int = 42,
    chat_id: int | None = None,
    message_id: int | None = None,
    first_name: str = "Ann",
    chat_type: str = "private",
    entities: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An ``edited_message`` update (with ``edit_date``)."""
    msg = text_update(text, user_id, chat_id, message_id, first_name, chat_type, entities=entities)["message"]
    msg["edit_date"] = msg["date"] + 1
    return {"edited_message": msg}


def photo_update(
    file_id: str,
    file_size: int,
    caption: str | None = None,
    media_group_id: str | None = None,
    **who: Any,
) -> dict[str, Any]:
    """A photo message: a thumbnail (``{file_id}_thumb``) then the full size ``file_id`` (last, as
    Telegram orders them); with ``media_group_id``, one part of an album."""
    msg = _message(**who)
    if media_group_id is not None:
        msg["media_group_id"] = media_group_id
    msg["photo"] = [
        {
            "file_id": f"{file_id}_thumb",
            "file_unique_id": f"u_{file_id}_thumb",
            "width": 90,
            "height": 67,
            "file_size": min(file_size, 1500),
        },
        {"file_id": file_id, "file_unique_id": f"u_{file_id}", "width": 1280, "height": 960, "file_size": file_size},
    ]
    if caption is not None:
        msg["caption"] = caption
    return {"message": msg}


def document_update(
    file_id: str,
    file_name: str,
    mime_type: str,
    file_size: int | None,
    caption: str | None = None,
    **who: Any,
) -> dict[str, Any]:
    """A document message; ``file_size`` None leaves the size out, as Telegram may."""
    msg = _message(**who)
    msg["document"] = {
        "file_id": file_id,
        "file_unique_id": f"u_{file_id}",
        "file_name": file_name,
        "mime_type": mime_type,
    }
    if file_size is not None:
        msg["document"]["file_size"] = file_size
    if caption is not None:
        msg["caption"] = caption
    return {"message": msg}


def voice_update(
    file_id: str,
    duration: int,
    file_size: int,
    **who: Any,
) -> dict[str, Any]:
    """A voice note (OGG/Opus)."""
    msg = _message(**who)
    msg["voice"] = {
        "file_id": file_id,
        "file_unique_id": f"u_{file_id}",
        "duration": duration,
        "mime_type": "audio/ogg",
        "file_size": file_size,
    }
    return {"message": msg}


def audio_update(file_id: str, duration: int, file_size: int, file_name: str, **who: Any) -> dict[str, Any]:
    """An audio file (a song, a recording shared from another app)."""
    msg = _message(**who)
    msg["audio"] = {
        "file_id": file_id,
        "file_unique_id": f"u_{file_id}",
        "duration": duration,
        "file_name": file_name,
        "mime_type": "audio/mpeg",
        "file_size": file_size,
    }
    return {"message": msg}


def video_note_update(file_id: str, duration: int, file_size: int, **who: Any) -> dict[str, Any]:
    """A video note (the round video message)."""
    msg = _message(**who)
    msg["video_note"] = {
        "file_id": file_id,
        "file_unique_id": f"u_{file_id}",
        "length": 384,
        "duration": duration,
        "file_size": file_size,
    }
    return {"message": msg}


def location_update(
    lat: float,
    lon: float,
    **who: Any,
) -> dict[str, Any]:
    """A location message."""
    msg = _message(**who)
    msg["location"] = {"latitude": lat, "longitude": lon}
    return {"message": msg}


def sticker_update(
    **who: Any,
) -> dict[str, Any]:
    """A sticker message: something the bot has no handler for."""
    msg = _message(**who)
    msg["sticker"] = {
        "file_id": "sticker_1",
        "file_unique_id": "u_sticker_1",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": False,
        "is_video": False,
        "emoji": "\N{THUMBS UP SIGN}",
    }
    return {"message": msg}


# --------------------------------------------------------------------------- the server


@dataclass
class Request:
    """One Bot API call as the fake received it."""

    method: str
    params: dict[str, Any]
    token: str
    files: dict[str, bytes] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)  # when it arrived


@dataclass
class _Answer:
    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass
class _Fault:
    status: int
    description: str
    retry_after: int | None


class Hold:
    """One call held inside the fake (see ``FakeTelegram.hold``): it has arrived once ``reached`` is set,
    and it is answered (and only then takes effect) once ``release`` is called."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self._released = threading.Event()

    def release(self) -> None:
        self._released.set()

    def _keep(self) -> None:
        self.reached.set()
        self._released.wait(timeout=30)  # never longer than a test may run


@dataclass
class _File:
    file_id: str
    content: bytes
    file_path: str
    too_big: bool
    file_size: int


class _ApiError(Exception):
    def __init__(self, status: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters


def _ok(result: Any) -> _Answer:
    return _Answer(200, json.dumps({"ok": True, "result": result}).encode())


def _error(status: int, description: str, parameters: dict[str, Any] | None = None) -> _Answer:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return _Answer(status, json.dumps(body).encode())


def _decode_value(name: str, value: str) -> Any:
    if name in _STRING_FIELDS:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _parse_body(content_type: str, raw: bytes) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Form fields (JSON-decoded where they parse) and uploaded files."""
    params: dict[str, Any] = {}
    files: dict[str, bytes] = {}
    if not raw:
        return params, files
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype == "multipart/form-data":
        head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name is None:
                continue
            payload = part.get_payload(decode=True) or b""
            if part.get_filename() is not None:
                files[str(name)] = payload
            else:
                params[str(name)] = _decode_value(str(name), payload.decode("utf-8"))
    elif ctype == "application/json":
        params = json.loads(raw)
    else:
        for key, value in parse_qsl(raw.decode("utf-8"), keep_blank_values=True):
            params[key] = _decode_value(key, value)
    return params, files


def _visible_text(text: str, parse_mode: str | None) -> str:
    """The text Telegram measures: markup stripped for HTML (roughly)."""
    if parse_mode and parse_mode.lower() == "html":
        return html.unescape(re.sub(r"<[^>]*>", "", text))
    return text


class FakeTelegram:
    """The server. Use as a context manager; hand ``base_url`` and ``base_file_url`` to ptb."""

    def __init__(self, token: str = DEFAULT_TOKEN) -> None:
        self.token = token
        self.requests: list[Request] = []
        self.sent: list[dict[str, Any]] = []  # successful sendMessage calls (all params + message_id)
        self.edits: list[dict[str, Any]] = []  # successful editMessageText and editMessageReplyMarkup calls
        self.answers: list[dict[str, Any]] = []  # answerCallbackQuery: {"callback_query_id", "text", ...}
        # successful sendMessageDraft calls: all params, plus "at" (time.monotonic() when received)
        self.drafts: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []  # sendChatAction: {"chat_id", "action"}
        self.commands: list[dict[str, Any]] | None = None  # last setMyCommands payload
        self.menu_buttons: dict[Any, dict[str, Any]] = {}  # setChatMenuButton: chat_id -> menu_button
        self.deleted: list[dict[str, Any]] = []  # deleteMessage: {"chat_id", "message_id"}
        self.get_updates_offsets: list[int | None] = []
        self.downloads: list[str] = []  # file paths downloaded from base_file_url
        self.tokens_seen: list[str] = []
        self.webhook: str | None = None
        self.allowed_updates: list[str] | None = None
        self.conflict = False
        # Telegram answers one getUpdates conflict at once, then the others within 3 s after 3 s.
        self.conflict_pause = 3.0
        self.conflicts = 0  # getUpdates calls ended by a later one
        self._next_conflict_at = 0.0
        self._long_polls = 0  # the number of the long poll now waiting
        self.reject_entities = False
        self._pending: list[dict[str, Any]] = []
        self._next_update_id = 1
        self._confirmed_offset = 0
        self._faults: dict[str, deque[_Fault | None]] = {}  # None: let that call through
        self._holds: dict[str, deque[Hold]] = {}
        self._all_holds: list[Hold] = []  # released on exit, so no handler thread stays blocked
        self._files: dict[str, _File] = {}
        self._messages: dict[tuple[Any, int], dict[str, Any]] = {}  # bot messages by (chat_id, message_id)
        self._bot_message_ids = itertools.count(1)
        self._closed = False
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._connections: set[socket.socket] = set()
        self._server = LocalServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/bot"

    @property
    def base_file_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/file/bot"

    def settings(self, **overrides: Any) -> dict[str, Any]:
        """The ``telegram`` settings section that points the real bot at this fake: the test token,
        user 42 (Ann, whom ``text_update`` sends as) allowlisted, the fake's URLs; ``overrides`` win."""
        return {
            "token": DEFAULT_TOKEN,
            "allowed_users": [42],
            "base_url": self.base_url,
            "base_file_url": self.base_file_url,
            **overrides,
        }

    def __enter__(self) -> FakeTelegram:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for hold in self._all_holds:
            hold.release()
        for conn in connections:  # idle keep-alive connections: unblock their handler threads
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """Wake every long poll (they answer with no updates) and refuse to long-poll again."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # ------------------------------------------------------------------ scripting

    def push_update(self, update: dict[str, Any]) -> int:
        """Queue an update for getUpdates; assigns the next ``update_id`` unless it has one.

        An id below the confirmed offset is refused: Telegram never delivers a confirmed update
        again, so a test that needs a redelivery must leave the offset unconfirmed instead."""
        with self._cond:
            update = dict(update)
            if "update_id" not in update:
                update["update_id"] = self._next_update_id
            if update["update_id"] < self._confirmed_offset:
                raise ValueError(
                    f"update {update['update_id']} is below the confirmed offset {self._confirmed_offset}: "
                    "Telegram would never deliver it"
                )
            self._next_update_id = max(self._next_update_id, update["update_id"] + 1)
            self._pending.append(update)
            self._pending.sort(key=lambda u: u["update_id"])
            self._cond.notify_all()
            return int(update["update_id"])

    def add_file(
        self,
        file_id: str,
        content: bytes,
        file_path: str = "photos/file_1.jpg",
        too_big: bool = False,
        file_size: int | None = None,
    ) -> None:
        """Make ``file_id`` known to getFile and ``file_path`` downloadable. ``too_big`` makes getFile
        refuse it like Telegram does for files over 20 MB; ``file_size`` is the size getFile reports
        (default: the content's), so a large file needs no large content."""
        with self._lock:
            size = len(content) if file_size is None else file_size
            self._files[file_id] = _File(file_id, content, file_path, too_big, size)

    def fail_next(
        self,
        method: str,
        status: int,
        description: str,
        retry_after: int | None = None,
        times: int = 1,
        skip: int = 0,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with this error, after letting ``skip`` calls
        through (``retry_after`` goes into ``parameters`` as Telegram does for 429)."""
        with self._lock:
            queue = self._faults.setdefault(method.lower(), deque())
            queue.extend(None for _ in range(skip))
            queue.extend(_Fault(status, description, retry_after) for _ in range(times))

    def hold(self, method: str) -> Hold:
        """Keep the next call of ``method`` on the wire: it is recorded in ``requests`` when it arrives,
        but neither runs nor is answered until the returned hold is released."""
        hold = Hold()
        with self._lock:
            self._holds.setdefault(method.lower(), deque()).append(hold)
            self._all_holds.append(hold)
        return hold

    @property
    def confirmed_offset(self) -> int:
        """The highest getUpdates ``offset`` seen: updates below it are gone."""
        with self._lock:
            return self._confirmed_offset

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed."""
        with self._lock:
            return list(self._pending)

    def calls(self, method: str) -> list[Request]:
        """The requests for one method (case-insensitive)."""
        with self._lock:
            return [r for r in self.requests if r.method.lower() == method.lower()]

    @property
    def sent_texts(self) -> list[str]:
        with self._lock:
            return [s["text"] for s in self.sent]

    def message(self, chat_id: Any, message_id: int) -> dict[str, Any] | None:
        """The current state of a message the bot sent (after edits)."""
        with self._lock:
            return self._messages.get((chat_id, message_id))

    # ------------------------------------------------------------------ waiting

    def wait_for(self, predicate: Callable[[FakeTelegram], bool], timeout: float = 10.0) -> None:
        """Block until ``predicate(self)`` holds (re-checked on every request and pushed update)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(self._timeout_message(predicate, timeout))
                self._cond.wait(remaining)

    async def await_for(self, predicate: Callable[[FakeTelegram], bool], timeout: float = 10.0) -> None:
        """``wait_for`` for coroutines: polls without blocking the event loop."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if predicate(self):
                    return
            if time.monotonic() >= deadline:
                raise AssertionError(self._timeout_message(predicate, timeout))
            await asyncio.sleep(0.01)

    def _timeout_message(self, predicate: Callable[..., bool], timeout: float) -> str:
        with self._lock:
            methods = [r.method for r in self.requests[-20:]]
            texts = [s.get("text") for s in self.sent[-5:]]
            pending = len(self._pending)
        name = getattr(predicate, "__qualname__", repr(predicate))
        return (
            f"FakeTelegram: {name} not true after {timeout}s; last requests: {methods}; "
            f"last sent texts: {texts}; pending updates: {pending}"
        )

    # ------------------------------------------------------------------ request handling

    def _record(self, request: Request) -> None:
        with self._cond:
            self.requests.append(request)
            self.tokens_seen.append(request.token)
            self._cond.notify_all()

    def _take_fault(self, method: str) -> _Fault | None:
        with self._lock:
            queue = self._faults.get(method.lower())
            return queue.popleft() if queue else None

    def _take_hold(self, method: str) -> Hold | None:
        with self._lock:
            queue = self._holds.get(method.lower())
            return queue.popleft() if queue else None

    def _answer_api(self, token: str, method: str, params: dict[str, Any], files: dict[str, bytes]) -> _Answer:
        self._record(Request(method, params, token, files))
        hold = self._take_hold(method)
        if hold is not None:
            hold._keep()
        if token != self.token:
            return _error(401, "Unauthorized")
        fault = self._take_fault(method)  # before the method runs: a failed getUpdates confirms nothing
        if fault is not None:
            parameters = {"retry_after": fault.retry_after} if fault.retry_after is not None else None
            return _error(fault.status, fault.description, parameters)
        handler = getattr(self, f"_api_{method.lower()}", None)
        if handler is None:
            return _error(404, "Not Found")
        try:
            return _ok(handler(params))
        except _ApiError as err:
            return _error(err.status, err.description, err.parameters)
        finally:
            with self._cond:
                self._cond.notify_all()

    def _answer_file(self, token: str, file_path: str) -> _Answer:
        if token != self.token:
            return _error(401, "Unauthorized")
        with self._cond:
            self.downloads.append(file_path)
            self._cond.notify_all()
            for f in self._files.values():
                if f.file_path == file_path and not f.too_big:
                    return _Answer(200, f.content, "application/octet-stream")
        return _error(404, "Not Found")

    # ---- methods (``_api_<lowercase name>``: params -> result, or raise _ApiError)

    def _api_getme(self, params: dict[str, Any]) -> Any:
        return dict(BOT_USER)

    def _api_getupdates(self, params: dict[str, Any]) -> Any:
        offset = params.get("offset")
        limit = max(1, min(100, int(params.get("limit") or 100)))
        timeout = float(params.get("timeout") or 0)
        with self._cond:
            self.get_updates_offsets.append(offset)
            if self.conflict:
                raise _ApiError(409, CONFLICT)
            if params.get("allowed_updates") is not None:
                self.allowed_updates = list(params["allowed_updates"])
            if offset is not None:
                offset = int(offset)
                if offset < 0:  # "the last -offset updates": forget the earlier ones
                    self._pending = self._pending[offset:]
                else:
                    self._confirmed_offset = max(self._confirmed_offset, offset)
                    self._pending = [u for u in self._pending if u["update_id"] >= offset]
            self._drop_disallowed()
            waits = timeout > 0 and not self._pending and not self._closed
            if waits:  # Telegram's do_get_updates: a call that will wait ends the one waiting before it
                self._long_polls += 1
                self._cond.notify_all()
            mine = self._long_polls
            deadline = time.monotonic() + timeout
            ended = False
            while True:
                self._drop_disallowed()
                ended = waits and self._long_polls != mine
                if self._pending or self._closed or self.conflict or ended:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            if self.conflict:
                raise _ApiError(409, CONFLICT)
            if ended:
                self.conflicts += 1
                now = time.monotonic()
                pause = 0.0 if now >= self._next_conflict_at else self.conflict_pause
                if not pause:
                    self._next_conflict_at = now + self.conflict_pause
            else:
                return [dict(u) for u in self._pending[:limit]]
        time.sleep(pause)  # outside the lock: the other calls go on meanwhile
        raise _ApiError(409, CONFLICT)

    def _drop_disallowed(self) -> None:
        """Telegram never delivers update kinds outside ``allowed_updates`` (empty means all)."""
        if not self.allowed_updates:
            return
        allowed = set(self.allowed_updates)
        self._pending = [u for u in self._pending if not (set(u) - {"update_id"}).isdisjoint(allowed)]

    def _check_text(self, params: dict[str, Any]) -> str:
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if self.reject_entities and (params.get("entities") or params.get("parse_mode")):
            raise _ApiError(400, CANT_PARSE_ENTITIES)
        visible = _visible_text(text, params.get("parse_mode"))
        if not visible.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if utf16_len(visible) > MAX_MESSAGE_LENGTH:
            raise _ApiError(400, "Bad Request: message is too long")
        return text

    @staticmethod
    def _chat_of(chat_id: Any) -> dict[str, Any]:
        if isinstance(chat_id, int) and chat_id < 0:
            return {"id": chat_id, "type": "supergroup", "title": "Test Group"}
        if isinstance(chat_id, int):
            return {"id": chat_id, "type": "private", "first_name": "Ann"}
        return {"id": -100999, "type": "channel", "title": str(chat_id)}

    @staticmethod
    def _check_web_app(button: dict[str, Any]) -> None:
        """Telegram opens only https pages as Mini Apps."""
        url = (button.get("web_app") or {}).get("url")
        if not isinstance(url, str) or not url.startswith("https://"):
            raise _ApiError(400, f"Bad Request: Web App URL '{url}' is invalid: Only HTTPS links are allowed")

    def _check_markup(self, params: dict[str, Any]) -> None:
        markup = params.get("reply_markup")
        if markup is None:
            return
        rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
        if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
            raise _ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
        for button in (b for row in rows for b in row):
            if not isinstance(button, dict) or not isinstance(button.get("text"), str):
                raise _ApiError(400, "Bad Request: can't parse inline keyboard button: text not found")
            data = button.get("callback_data")
            if data is not None and not (isinstance(data, str) and 1 <= len(data.encode()) <= 64):
                raise _ApiError(400, "Bad Request: BUTTON_DATA_INVALID")  # 1-64 bytes
            if "web_app" in button:
                if not isinstance(params.get("chat_id"), int) or params["chat_id"] < 0:
                    raise _ApiError(400, "Bad Request: BUTTON_TYPE_INVALID")  # web_app buttons: private chats only
                self._check_web_app(button)

    def _api_sendmessage(self, params: dict[str, Any]) -> Any:
        if params.get("chat_id") is None:
            raise _ApiError(400, "Bad Request: chat_id is empty")
        text = self._check_text(params)
        self._check_markup(params)
        with self._lock:
            message_id = next(self._bot_message_ids)
            msg: dict[str, Any] = {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": self._chat_of(params["chat_id"]),
                "from": dict(BOT_USER),
                "text": text,
            }
            if params.get("entities"):
                msg["entities"] = params["entities"]
            if params.get("reply_markup"):
                msg["reply_markup"] = params["reply_markup"]
            self._messages[(params["chat_id"], message_id)] = msg
            reply_parameters = params.get("reply_parameters")
            entry: dict[str, Any] = {
                "method": "sendMessage",
                "chat_id": None,
                "text": None,
                "entities": None,
                "parse_mode": None,
                "reply_parameters": None,
                "reply_markup": None,
                "reply_to_message_id": (
                    reply_parameters.get("message_id") if isinstance(reply_parameters, dict) else None
                ),
                **params,
                "message_id": message_id,
            }
            self.sent.append(entry)
            return msg

    def _api_editmessagetext(self, params: dict[str, Any]) -> Any:
        text = self._check_text(params)
        with self._lock:
            key = (params.get("chat_id"), params.get("message_id"))
            msg = self._messages.get(key)
            if msg is None:
                raise _ApiError(400, "Bad Request: message to edit not found")
            entities = params.get("entities") or None
            if msg["text"] == text and msg.get("entities") == entities and "reply_markup" not in params:
                raise _ApiError(400, NOT_MODIFIED)
            msg = {**msg, "text": text, "edit_date": int(time.time())}
            msg.pop("entities", None)
            if entities:
                msg["entities"] = entities
            self._messages[key] = msg
            self.edits.append({"method": "editMessageText", "chat_id": None, "text": None, **params})
            return msg

    def _api_editmessagereplymarkup(self, params: dict[str, Any]) -> Any:
        self._check_markup(params)
        with self._lock:
            key = (params.get("chat_id"), params.get("message_id"))
            msg = self._messages.get(key)
            if msg is None:
                raise _ApiError(400, "Bad Request: message to edit not found")
            if msg.get("reply_markup") == params.get("reply_markup"):
                raise _ApiError(400, NOT_MODIFIED)
            msg = {**msg, "edit_date": int(time.time())}
            msg.pop("reply_markup", None)
            if params.get("reply_markup"):
                msg["reply_markup"] = params["reply_markup"]
            self._messages[key] = msg
            self.edits.append({"method": "editMessageReplyMarkup", **params})
            return msg

    def _api_answercallbackquery(self, params: dict[str, Any]) -> Any:
        if not params.get("callback_query_id"):
            raise _ApiError(400, "Bad Request: QUERY_ID_INVALID")
        with self._lock:
            if any(a["callback_query_id"] == params["callback_query_id"] for a in self.answers):
                raise _ApiError(
                    400, "Bad Request: query is too old and response timeout expired or query ID is invalid"
                )
            self.answers.append({"text": None, **params})
        return True

    def _api_sendmessagedraft(self, params: dict[str, Any]) -> Any:
        chat_id, draft_id = params.get("chat_id"), params.get("draft_id")
        if not isinstance(chat_id, int) or chat_id <= 0:
            raise _ApiError(400, "Bad Request: TEXTDRAFT_PEER_INVALID")  # private chats only
        if not isinstance(draft_id, int) or draft_id == 0:
            raise _ApiError(400, "Bad Request: draft_id must be non-zero")
        if params.get("text"):  # an empty text is allowed: a "Thinking..." placeholder
            self._check_text(params)
        with self._lock:
            self.drafts.append({"chat_id": chat_id, "draft_id": draft_id, "text": "", **params, "at": time.monotonic()})
        return True

    def _api_sendchataction(self, params: dict[str, Any]) -> Any:
        with self._lock:
            self.actions.append({"chat_id": params.get("chat_id"), "action": params.get("action")})
        return True

    def _api_setmycommands(self, params: dict[str, Any]) -> Any:
        with self._lock:
            self.commands = params.get("commands")
        return True

    def _api_setchatmenubutton(self, params: dict[str, Any]) -> Any:
        button = params.get("menu_button") or {"type": "default"}
        if button.get("type") not in ("commands", "web_app", "default"):
            raise _ApiError(400, "Bad Request: unsupported menu button type")
        if button["type"] == "web_app":
            if not isinstance(button.get("text"), str) or not button["text"]:
                raise _ApiError(400, "Bad Request: menu button text is empty")
            self._check_web_app(button)
        with self._lock:
            self.menu_buttons[params.get("chat_id")] = button
        return True

    def _api_getmycommands(self, params: dict[str, Any]) -> Any:
        with self._lock:
            return self.commands or []

    def _api_deletemessage(self, params: dict[str, Any]) -> Any:
        with self._lock:
            key = (params.get("chat_id"), params.get("message_id"))
            self._messages.pop(key, None)
            self.deleted.append({"chat_id": key[0], "message_id": key[1]})
        return True

    def _api_getfile(self, params: dict[str, Any]) -> Any:
        with self._lock:
            f = self._files.get(str(params.get("file_id")))
        if f is None:
            raise _ApiError(400, "Bad Request: invalid file_id")
        if f.too_big:
            raise _ApiError(400, "Bad Request: file is too big")
        return {
            "file_id": f.file_id,
            "file_unique_id": f"u_{f.file_id}",
            "file_size": f.file_size,
            "file_path": f.file_path,
        }

    def _api_deletewebhook(self, params: dict[str, Any]) -> Any:
        with self._lock:
            self.webhook = None
            if params.get("drop_pending_updates"):
                self._pending.clear()
        return True

    def _api_setwebhook(self, params: dict[str, Any]) -> Any:
        with self._lock:
            self.webhook = params.get("url")
            if params.get("drop_pending_updates"):
                self._pending.clear()
        return True

    def _api_getwebhookinfo(self, params: dict[str, Any]) -> Any:
        with self._lock:
            return {
                "url": self.webhook or "",
                "has_custom_certificate": False,
                "pending_update_count": len(self._pending),
            }

    def _api_close(self, params: dict[str, Any]) -> Any:
        return True

    def _api_logout(self, params: dict[str, Any]) -> Any:
        return True

    # ------------------------------------------------------------------ HTTP plumbing

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with fake._lock:
                    fake._connections.add(self.connection)

            def finish(self) -> None:
                try:
                    super().finish()
                finally:
                    with fake._lock:
                        fake._connections.discard(self.connection)

            def _route(self, raw: bytes) -> _Answer:
                url = urlsplit(self.path)
                path = unquote(url.path)
                if path.startswith("/file/bot"):
                    token, _, file_path = path[len("/file/bot") :].partition("/")
                    return fake._answer_file(token, file_path)
                if path.startswith("/bot"):
                    token, _, method = path[len("/bot") :].partition("/")
                    params, files = _parse_body(self.headers.get("content-type", ""), raw)
                    for key, value in parse_qsl(url.query, keep_blank_values=True):
                        params.setdefault(key, _decode_value(key, value))
                    return fake._answer_api(token, method, params, files)
                return _error(404, "Not Found")

            def _serve(self) -> None:
                length = int(self.headers.get("content-length", 0) or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    answer = self._route(raw)
                except Exception as exc:  # a bug in the fake: answer 500 rather than hang the client
                    answer = _error(500, f"Internal Server Error: fake crashed: {exc!r}")
                self.send_response(answer.status)
                self.send_header("content-type", answer.content_type)
                self.send_header("content-length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_POST = _serve  # noqa: N815 (http.server's naming)
            do_GET = _serve  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
