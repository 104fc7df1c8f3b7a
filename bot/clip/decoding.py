"""A page's content codings undone as it streams in, every layer counted.

``Content-Encoding`` may stack codings: ``gzip, gzip`` turns 3 KB on the wire into gigabytes, the
first layer into megabytes of gzip and the second into the rest. So each layer is inflated in
pieces of at most :data:`PIECE` bytes and what every layer puts out is counted against the limit,
as the bytes on the wire are: decoding stops at the limit however deep the stack, and no call ever
holds more than a piece. Only the codings vaultbot asks for (:data:`ACCEPTED`; ``identity`` is no
coding) are undone: any other, or more than :data:`MAX_LAYERS` stacked, is refused rather than
handed on as if it were the page.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from bot.clip.errors import ClipError, too_large

# What the request's Accept-Encoding offers: both are undone by zlib with a bound on each call's output.
ACCEPTED = "gzip, deflate"
PIECE = 64 * 1024
MAX_LAYERS = 3
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


class _Inflate:
    """One layer: zlib's decompressor, asked for at most a piece at a time."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._wbits = _WBITS[coding]
        self._inflate = zlib.decompressobj(self._wbits)
        self._started = False

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """What ``data`` inflates to, a piece at a time (nothing more once the coding's stream has ended)."""
        pending = data
        while not self._inflate.eof:
            try:
                piece = self._inflate.decompress(pending, PIECE)
            except zlib.error as exc:
                if self._started or self._wbits != zlib.MAX_WBITS:
                    raise _damaged(self.coding) from exc
                # "deflate" is meant to be zlib-wrapped; some servers send it raw, and browsers accept that.
                self._wbits = -zlib.MAX_WBITS
                self._inflate = zlib.decompressobj(self._wbits)
                continue
            self._started = self._started or bool(pending)
            left = self._inflate.unconsumed_tail
            if piece:
                yield piece
            if not left and len(piece) < PIECE:
                return  # the input is used up and no output is held back
            if not piece and left == pending:
                raise _damaged(self.coding)  # no progress: nothing more will come of it
            pending = left  # empty after a full piece: ask again for what zlib holds back

    def end(self) -> Iterator[bytes]:
        """What is held back once the input has ended; raises when the coding's stream was cut short."""
        if not self._started:
            return  # an empty body
        yield from self.pieces(b"")
        if not self._inflate.eof:
            raise _damaged(self.coding)  # a clipping without the page's end would lie about the page


class Decoding:
    """Undoes ``codings`` (the ``Content-Encoding`` values in the order the server applied them),
    refusing once the bytes on the wire or any layer's output pass ``limit``. Feed it with
    :meth:`feed` and finish with :meth:`end`; both give the page's bytes in pieces."""

    def __init__(self, codings: list[str], limit: int) -> None:
        layers = [coding for coding in (c.strip().lower() for c in codings) if coding and coding != "identity"]
        unknown = [coding for coding in layers if coding not in _WBITS]
        if unknown:
            raise ClipError(
                f"The page is sent in the {unknown[0]} coding, which vaultbot does not read: not clipped.",
                "unsupported_content",
            )
        if len(layers) > MAX_LAYERS:
            raise ClipError(
                f"The page is compressed {len(layers)} times over ({', '.join(layers)}); vaultbot undoes at most "
                f"{MAX_LAYERS}: not clipped.",
                "unsupported_content",
            )
        self._limit = limit
        # Undone last applied first.
        self._layers = [_Inflate(coding) for coding in reversed(layers)]
        self._counts = [0] * (len(self._layers) + 1)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The page's bytes that ``data`` (the next bytes off the wire) gives."""
        self._count(0, len(data))
        yield from self._through(0, data)

    def end(self) -> Iterator[bytes]:
        """The rest of the page, once the wire has given everything; raises when a layer was cut short."""
        for index, layer in enumerate(self._layers):
            for piece in layer.end():
                self._count(index + 1, len(piece))
                yield from self._through(index + 1, piece)

    def _through(self, index: int, data: bytes) -> Iterator[bytes]:
        if index == len(self._layers):
            if data:
                yield data
            return
        for piece in self._layers[index].pieces(data):
            self._count(index + 1, len(piece))
            yield from self._through(index + 1, piece)

    def _count(self, layer: int, size: int) -> None:
        self._counts[layer] += size
        if self._counts[layer] > self._limit:
            raise too_large(self._limit)


def _damaged(coding: str) -> ClipError:
    message = f"The page arrived damaged: its {coding} coding could not be undone."
    return ClipError(message, "fetch_failed", retryable=True)
