"""Reading documents in a sandbox: a process of their own, with limits of time and memory.

A PDF can cost seconds of processor time a page, or gigabytes of memory for a stream that inflates;
read in the application's own process it held the GIL, and read under the search index's lock it held
every other search back for minutes. So a document's text comes from :mod:`vault.document_process`, a
fork server started at the first document, whose children each read one document within
:class:`ReadingLimits`. Pages come back as they are read, so a document that meets a limit keeps what
was read before it. At most :data:`AT_ONCE` documents are read at a time, and the last few results are
kept by the hash of their bytes: reading the same document again (``vault_read`` after the message,
the search index) costs nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import socket
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault.document_process import receive_frame, send_frame
from vault.documents import INDEX_CHARS, DocumentText, page_marker

log = logging.getLogger(__name__)

AT_ONCE = 2
_KEPT = 8
_DAMAGED = "it is damaged"
_PROCESS = Path(__file__).with_name("document_process.py")


@dataclass(frozen=True)
class ReadingLimits:
    """What reading one document may cost: processor seconds for a page of a PDF and for the whole
    document, and megabytes of memory (the reading process's address space)."""

    page_seconds: float = 2.0
    document_seconds: float = 15.0
    memory_mb: int = 512

    @property
    def wall_seconds(self) -> float:
        """The clock time after which a reading ends whatever it is doing (a loaded machine gives it
        less than a whole core, so well past its processor time)."""
        return 4 * self.document_seconds + 5

    def too_big(self, size: int) -> DocumentText | None:
        """What to say of a file of ``size`` bytes too big to read within the memory limit; None if it may be read."""
        # A quarter: the reading child holds the bytes twice while they arrive, and pypdf needs room besides.
        if size <= self.memory_mb * 1024 * 1024 // 4:
            return None
        return DocumentText("limited", stopped=f"the file is larger than the {self.memory_mb // 4} MB vaultbot reads")


class DocumentReader:
    """Reads documents' text in the sandbox. Thread-safe; :meth:`close` it."""

    def __init__(self, limits: ReadingLimits | None = None) -> None:
        self.limits = limits or ReadingLimits()
        self._lock = threading.Lock()
        self._turns = threading.Semaphore(AT_ONCE)
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._reading: set[socket.socket] = set()
        self._kept: OrderedDict[tuple[str, bool, int], DocumentText] = OrderedDict()
        # Documents being read now: a second reader of the same bytes waits for the first one's text.
        self._underway: dict[tuple[str, bool, int], threading.Event] = {}
        self._closed = False

    def read(self, data: bytes, name: str, *, max_chars: int = INDEX_CHARS) -> DocumentText:
        """The text of the document ``data`` called ``name`` (its suffix decides how it is read), at most
        ``max_chars`` characters. Blocking: call it from a worker thread. Raises ``OSError`` only when the
        reading process cannot be started."""
        if not data.strip():
            return DocumentText("empty")
        pdf = name.lower().endswith(".pdf")
        key = (hashlib.sha256(data).hexdigest(), pdf, max_chars)
        while True:
            with self._lock:
                if key in self._kept:
                    self._kept.move_to_end(key)
                    return self._kept[key]
                underway = self._underway.get(key)
                if underway is None:
                    done = self._underway[key] = threading.Event()
                    break
            underway.wait()  # then take its text from what is kept (or read it, if that reading failed)
        try:
            found = self.limits.too_big(len(data))
            if found is None:
                with self._turns:
                    found = self._read(data, name, pdf, max_chars)
            with self._lock:
                if self._closed:  # cut short by close(): what it has is no limit's doing, so it is not kept
                    raise OSError("the document reader was closed while reading")
                self._kept[key] = found
                while len(self._kept) > _KEPT:
                    self._kept.popitem(last=False)
            return found
        finally:
            with self._lock:
                del self._underway[key]
            done.set()

    def close(self) -> None:
        """Stop the reading process; readings under way end with what they have."""
        with self._lock:
            self._closed = True
            for conn in self._reading:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            self._stop()

    def _read(self, data: bytes, name: str, pdf: bool, max_chars: int) -> DocumentText:
        limits = self.limits
        request = {
            "name": name,
            "page_seconds": limits.page_seconds,
            "document_seconds": limits.document_seconds,
            "wall_seconds": limits.wall_seconds,
            "memory_bytes": limits.memory_mb * 1024 * 1024,
            "max_chars": max_chars,
        }
        pages = _Pages(pdf, max_chars, limits)
        started = time.perf_counter()
        with self._connection() as conn:
            try:
                send_frame(conn, json.dumps(request).encode())
                send_frame(conn, data)
            except OSError:
                pass  # the child ended before taking it all (out of memory): what it said is still to be read
            while not pages.full:
                try:
                    frame = receive_frame(conn)
                except OSError:
                    frame = None
                if frame is None:
                    break
                pages.take(json.loads(frame))
        elapsed = time.perf_counter() - started
        found = pages.result(elapsed)
        log.info(
            "document %s: %s, %d of %d pages, %.0fms (%.0fms of processor time in its process)%s",
            name,
            found.status,
            found.pages_read,
            found.pages,
            elapsed * 1000,
            pages.cpu * 1000,
            f"; left out: {found.limits}" if found.limits else "",
        )
        return found

    @contextlib.contextmanager
    def _connection(self) -> Any:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._lock:
                if self._closed:
                    raise OSError("the document reader is closed")
                self._hand_over(theirs)
                self._reading.add(ours)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(self.limits.wall_seconds + 10)
        try:
            yield ours
        finally:
            with self._lock:
                self._reading.discard(ours)
            ours.close()

    def _hand_over(self, conn: socket.socket) -> None:
        """Give ``conn`` to the fork server (started, or started again if it died); the lock is held."""
        for attempt in (1, 2):
            if self._control is None:
                self._start()
            assert self._control is not None
            try:
                socket.send_fds(self._control, [b"d"], [conn.fileno()])
                return
            except OSError:
                if attempt == 2:
                    raise
                log.warning("The document reading process had ended; it is started again.")
                self._stop()

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # -I: the standard library and installed packages only, nothing from the working directory.
            self._process = subprocess.Popen(
                [sys.executable, "-I", str(_PROCESS), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a group of its own, which it ends, children and all, when this end closes
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._control = ours

    def _stop(self) -> None:
        if self._control is not None:
            self._control.close()  # the fork server ends when this end closes, and its children with it
            self._control = None
        if self._process is not None:
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None


class _Pages:
    """A document's text put together from the pages the reading child sends, as they come."""

    def __init__(self, pdf: bool, max_chars: int, limits: ReadingLimits) -> None:
        self._pdf = pdf
        self._max_chars = max_chars
        self._limits = limits
        self._parts: list[str] = []
        self._size = 0
        self._total = 0
        self._read = 0
        self._skipped: list[tuple[int, str]] = []
        self._found_text = False
        self._cut = False
        self._status: str | None = None
        self._stopped: str | None = None
        self._ended = False
        self.full = False
        self.cpu = 0.0  # the child's processor time, in seconds, when it said (not when a backstop ended it)

    def take(self, frame: dict[str, Any]) -> None:
        """Add one frame of the child's answer; ``full`` turns true once there is text enough."""
        if "pages" in frame:
            self._total = int(frame["pages"])
        elif "page" in frame:
            self._page(int(frame["page"]), frame)
        elif "status" in frame:
            self._status = str(frame["status"])
        elif "stopped" in frame:
            self._stopped = self._stop_reason(str(frame["stopped"]))
        elif "end" in frame:
            self._ended = True
            self.cpu = float(frame.get("cpu", 0.0))

    def _page(self, number: int, frame: dict[str, Any]) -> None:
        if "skipped" in frame:
            why = self._skip_reason(str(frame["skipped"]))
            self._skipped.append((number, why))
            words = f"[Not read: {why}.]"
        else:
            words = str(frame.get("text", ""))
            self._found_text = self._found_text or bool(words.strip())
        block = f"{page_marker(number)}\n{words}" if self._pdf else words
        self._parts.append(block[: self._max_chars - self._size])
        self._size += len(block) + 2
        self._read = number
        self._cut = self._cut or bool(frame.get("cut"))
        self.full = self._size >= self._max_chars

    def result(self, elapsed: float) -> DocumentText:
        """What was read, once the child has said everything (or hung up, or was ended by a backstop)
        ``elapsed`` seconds after it was asked."""
        if self._status is not None:
            return DocumentText(self._status, pages=self._total)
        stopped = self._stopped
        if stopped is None and not self._ended and not self.full:
            stopped = (
                f"reading the document took more than the {self._limits.wall_seconds:g} s by the clock vaultbot "
                "allows one (the machine was busy)"
                if elapsed >= self._limits.wall_seconds - 1
                else "reading the document went past the limits of time and memory vaultbot allows one "
                f"({self._limits.document_seconds:g} s of processor time, {self._limits.memory_mb} MB)"
            )
        skipped = tuple(self._skipped)
        if not self._found_text:
            limited = stopped is not None or any(why != _DAMAGED for _, why in skipped)
            status = "limited" if limited else "corrupt" if skipped else "no_text"
            return DocumentText(status, pages=self._total, pages_read=self._read, skipped=skipped, stopped=stopped)
        return DocumentText(
            "ok",
            "\n\n".join(self._parts),
            pages=self._total,
            pages_read=self._read,
            truncated=self.full if self._pdf else self._cut,  # the limit of characters, not of time or memory
            skipped=skipped,
            stopped=stopped,
        )

    def _skip_reason(self, code: str) -> str:
        if code == "time":
            return f"it took more than the {self._limits.page_seconds:g} s of processor time vaultbot allows a page"
        if code == "memory":
            return f"it needed more than the {self._limits.memory_mb} MB of memory vaultbot allows a document"
        return _DAMAGED

    def _stop_reason(self, code: str) -> str:
        if code == "memory":
            memory = self._limits.memory_mb
            return f"reading the document needed more than the {memory} MB of memory vaultbot allows one"
        return (
            f"reading the document took more than the {self._limits.document_seconds:g} s of processor time "
            "vaultbot allows one"
        )
