"""The process that reads documents: each one in a child of its own, within limits of time and memory.

It runs by its file path (``python -I document_process.py FD``), not as part of the ``vault`` package,
so it holds only the standard library and pypdf. It is a fork server: on the socket ``FD`` it is sent
one connection per document, and it forks a child for each. The child sets its limits, reads, sends
each page back as soon as it is read, and exits. So a document that runs out of time or memory costs
its own child and nothing else, and a reading costs a fork (a millisecond or two), not the start of a
Python with pypdf (a third of a second).

The limits, named by each request:
- CPU seconds per page (an interval timer): a page past it is skipped, and the answer says so;
- CPU seconds per document: reading stops when they are spent, and the answer says where;
- memory (the child's address space, ``RLIMIT_AS``): a page that needs more is skipped.
Backstops for code that never comes back to Python (a regular expression gone wild, a decompressor):
``RLIMIT_CPU`` past the document's seconds and a wall-clock alarm end the child; the pages it sent are kept.

The wire: frames of a 4-byte big-endian length and a body. A request is a JSON frame (``name``,
``page_seconds``, ``document_seconds``, ``wall_seconds``, ``memory_bytes``, ``max_chars``) and a frame
of the document's bytes. The answer is JSON frames: ``{"pages": N}`` (1 for a text file), then per
page ``{"page": n, "text": …}`` (``"cut": true`` when a text file was longer than ``max_chars``) or
``{"page": n, "skipped": "time" | "memory" | "damaged"}``; or instead ``{"status": "empty" |
"encrypted" | "corrupt"}``; ``{"stopped": "time" | "memory"}`` when reading ended before the last
page; and last ``{"end": true, "cpu": seconds}`` (the child's processor time), unless a backstop
ended the child. The reader hangs up once it has text enough; the child then ends on its next send.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import logging
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator
from typing import Any

_LENGTH = struct.Struct(">I")
# A page's timer that something swallowed fires again this soon.
_AGAIN = 0.05


class _TimeUp(BaseException):
    """CPU time ran out (a BaseException, so that a library's ``except Exception`` does not swallow it)."""


def send_frame(conn: socket.socket, body: bytes) -> None:
    """Send one frame."""
    conn.sendall(_LENGTH.pack(len(body)) + body)


def receive_frame(conn: socket.socket) -> bytes | None:
    """The next frame, or None when the other end hung up."""
    head = _receive_exactly(conn, _LENGTH.size)
    if head is None:
        return None
    return _receive_exactly(conn, _LENGTH.unpack(head)[0])


def _receive_exactly(conn: socket.socket, size: int) -> bytes | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        count = conn.recv_into(view[got:])
        if count == 0:
            return None
        got += count
    return bytes(buffer)


def serve(control: socket.socket) -> None:
    """Fork a reading child for each connection sent on ``control``, until the other end closes it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the application's to handle; it closes ``control``
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    _warm_up()
    # The collector would walk (and so copy, page by page) every object each child inherits: not these.
    gc.freeze()
    try:
        _fork_per_connection(control)
    finally:
        # The reader is gone (closed, or its process ended): so are the readings under way, now, rather
        # than at their next page. Only when this process leads its own group (the reader starts it so).
        if os.getpgid(0) == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)


def _fork_per_connection(control: socket.socket) -> None:
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1, 1)
        except OSError:
            return
        if not message:
            return
        if not fds:
            continue
        try:
            child = os.fork()
        except OSError:
            child = -1  # no fork to be had: the reader finds the connection closed, unanswered
        if child == 0:
            try:
                control.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                with socket.socket(fileno=fds[0]) as conn:
                    _read_one(conn)
            finally:
                os._exit(0)  # whatever happened, never back into the server's loop
        os.close(fds[0])


def _warm_up() -> None:
    """Read one page here, once: pypdf imports and builds much on its first page (~40 ms), which every
    child would pay again."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    page = writer.add_blank_page(width=100, height=100)
    font = {NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1")}
    font[NameObject("/BaseFont")] = NameObject("/Helvetica")
    resources = {NameObject("/F1"): writer._add_object(DictionaryObject(font))}
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(resources)})
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 12 Tf 10 50 Td (warm) Tj ET")
    page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    PdfReader(io.BytesIO(out.getvalue())).pages[0].extract_text()


def _read_one(conn: socket.socket) -> None:
    header = receive_frame(conn)
    if header is None:
        return
    request = json.loads(header)
    _limit(request)
    try:
        data = receive_frame(conn)
    except MemoryError:
        _send(conn, {"stopped": "memory"})
        return
    if data is None:
        return
    for answer in _answers(data, request):
        _send(conn, answer)
    _send(conn, {"end": True, "cpu": time.process_time()})


def _limit(request: dict[str, Any]) -> None:
    import resource  # POSIX only: imported here, so that the vault package imports everywhere

    document = float(request["document_seconds"])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # The soft CPU limit sends SIGXCPU (which ends the process), the hard one SIGKILL: both only if the
    # timers below did not end the reading first.
    cpu = int(document) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = int(request["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, int(float(request["wall_seconds"]))))
    signal.signal(signal.SIGPROF, _time_up)


def _time_up(signum: int, frame: object) -> None:
    signal.setitimer(signal.ITIMER_PROF, _AGAIN)  # in case what is running swallows this one
    raise _TimeUp


@contextlib.contextmanager
def _cpu_limit(seconds: float) -> Iterator[None]:
    signal.setitimer(signal.ITIMER_PROF, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _send(conn: socket.socket, frame: dict[str, Any]) -> None:
    send_frame(conn, json.dumps(frame).encode("ascii"))  # escaped: a lone surrogate from a PDF survives the trip


def _answers(data: bytes, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if not data.strip():
        yield {"status": "empty"}
        return
    if str(request["name"]).lower().endswith(".pdf"):
        yield from _pdf(data, float(request["page_seconds"]), float(request["document_seconds"]))
        return
    text = _decode(data)
    limit = int(request["max_chars"])
    yield {"pages": 1}
    yield {"page": 1, "text": text[:limit], "cut": len(text) > limit}


def _decode(data: bytes) -> str:
    # Text files come from phones and every kind of PC: UTF-8 (with or without a BOM), else Windows' code page.
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _pdf(data: bytes, page_seconds: float, document_seconds: float) -> Iterator[dict[str, Any]]:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PyPdfError

    # pypdf logs what it works around in a damaged file; nobody reads this process's output.
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    # pypdf raises many kinds of error on a damaged file; each means the same thing to a person.
    damaged = (PyPdfError, ValueError, TypeError, KeyError, AttributeError, IndexError, OSError, RecursionError)
    started = time.process_time()

    def left() -> float:
        return document_seconds - (time.process_time() - started)

    try:
        with _cpu_limit(left()):
            reader = PdfReader(io.BytesIO(data))
            locked = reader.is_encrypted and not _opens_without_password(reader, PyPdfError)
            total = len(reader.pages)
    except _TimeUp:
        yield {"stopped": "time"}
        return
    except MemoryError:
        yield {"stopped": "memory"}
        return
    except FileNotDecryptedError:
        yield {"status": "encrypted"}
        return
    except damaged:
        yield {"status": "corrupt"}
        return
    yield {"pages": total}
    if locked:
        yield {"status": "encrypted"}
        return
    for number in range(1, total + 1):
        if left() <= 0:
            yield {"stopped": "time"}
            return
        page_limit = min(page_seconds, left())
        try:
            with _cpu_limit(page_limit):
                words = (reader.pages[number - 1].extract_text() or "").strip()
        except _TimeUp:
            if page_limit < page_seconds:
                yield {"stopped": "time"}  # the timer was the rest of the document's time, not the page's
                return
            yield {"page": number, "skipped": "time"}
            continue
        except MemoryError:
            yield {"page": number, "skipped": "memory"}
            continue
        except damaged:
            yield {"page": number, "skipped": "damaged"}
            continue
        yield {"page": number, "text": words}


def _opens_without_password(reader: Any, errors: type[Exception]) -> bool:
    # Many "encrypted" PDFs only restrict printing or copying: they open with an empty user password.
    try:
        return bool(reader.decrypt(""))
    except (errors, NotImplementedError):
        return False


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
