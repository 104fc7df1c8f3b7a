"""Fetching a link safely: only http(s), each hop's address checked, at most five redirects, only
HTML, plain text or PDF, at most ``max_bytes`` on the wire and after every layer of decoding, all
within ``timeout``.

A page that is too big is refused, never cut: a clipping that silently lost its end would be a
note that lies about the page.

The requests go through httpcore's connection pool, which takes a network backend of its own
(:class:`~bot.clip.addresses.CheckedBackend`, so every connection goes to an address checked) and
hands the body over as it came off the wire: :mod:`bot.clip.decoding` undoes its codings a piece at
a time, counting, between awaits, so the timeout covers decoding too and nothing is decoded in one
piece on the event loop. No proxy from the environment is used: it would connect to addresses
nobody checked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpcore
import httpx

from bot.clip.addresses import CheckedBackend, Resolver, Rule, refusal, resolve
from bot.clip.decoding import ACCEPTED, Decoding
from bot.clip.errors import ClipError, too_large

MAX_REDIRECTS = 5
CONTENT_TYPES = ("text/html", "text/plain", "application/pdf")
_REDIRECTS = (301, 302, 303, 307, 308)
_HEADERS = [
    ("User-Agent", "Mozilla/5.0 (compatible; vaultbot clip_link)"),
    ("Accept", "text/html,text/plain;q=0.9,application/pdf;q=0.8"),
    ("Accept-Encoding", ACCEPTED),
]
# httpcore's errors have no common base; these are a site that cannot be reached or spoke nonsense.
_FAILURES = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
    httpcore.ConnectionNotAvailable,
    httpcore.ProxyError,
)


@dataclass(frozen=True)
class Fetched:
    """A page as it arrived: the address it came from at last (after redirects), its media type,
    the charset its headers named (None when they named none) and its bytes, decoded."""

    url: str
    media_type: str
    charset: str | None
    data: bytes


class Fetcher:
    """Fetches pages for clipping; one connection pool for its life. :meth:`close` it."""

    def __init__(
        self,
        *,
        allow_private: bool,
        max_bytes: int,
        timeout: float,
        resolver: Resolver = resolve,
        rule: Rule = refusal,
    ) -> None:
        """``resolver`` and ``rule`` replace the name lookup and :func:`~bot.clip.addresses.refusal`."""
        self._max_bytes = max_bytes
        self._timeout = timeout
        backend = CheckedBackend(allow_private=allow_private, resolver=resolver, rule=rule)
        self._pool = httpcore.AsyncConnectionPool(ssl_context=httpx.create_ssl_context(), network_backend=backend)

    async def close(self) -> None:
        """Close the connections."""
        await self._pool.aclose()

    async def fetch(self, url: str) -> Fetched:
        """The page at ``url``, or :class:`ClipError` saying why not."""
        try:
            async with asyncio.timeout(self._timeout):
                return await self._follow(checked_url(url))
        except (TimeoutError, httpcore.TimeoutException) as exc:
            raise ClipError(
                f"The page did not arrive within {self._timeout:g} seconds (VAULTBOT_CLIP__TIMEOUT).",
                "timeout",
                retryable=True,
            ) from exc
        except _FAILURES as exc:
            message = f"The page could not be fetched ({_describe(exc)})."
            raise ClipError(message, "fetch_failed", retryable=True) from exc

    async def _follow(self, url: httpx.URL) -> Fetched:
        seen = {str(url)}
        timeouts = {"connect": self._timeout, "read": self._timeout, "write": self._timeout, "pool": self._timeout}
        for _ in range(MAX_REDIRECTS + 1):
            target = httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path)
            headers = [("Host", url.netloc.decode("ascii")), *_HEADERS]
            async with self._pool.stream("GET", target, headers=headers, extensions={"timeout": timeouts}) as response:
                location = _header(response, "location")
                if response.status in _REDIRECTS and location is not None:
                    url = checked_url(str(url.join(location)))
                    if str(url) in seen:
                        raise ClipError("The page redirects in a loop, so there is nothing to clip.", "redirect_loop")
                    seen.add(str(url))
                    continue
                return await self._body(url, response)
        message = f"The page redirects more than {MAX_REDIRECTS} times; vaultbot stops there."
        raise ClipError(message, "too_many_redirects")

    async def _body(self, url: httpx.URL, response: httpcore.Response) -> Fetched:
        if response.status >= 400:
            reason = response.extensions.get("reason_phrase", b"").decode("ascii", errors="replace")
            raise ClipError(
                f"The site answered {response.status} {reason}.".replace(" .", "."),
                "http_error",
                retryable=response.status >= 500 or response.status == 429,
            )
        media_type, charset = _content_type(_header(response, "content-type") or "")
        if media_type not in CONTENT_TYPES:
            raise ClipError(
                f"The link is {media_type or 'of no declared type'}, not a web page, text or PDF: not clipped.",
                "unsupported_content",
            )
        declared = _header(response, "content-length") or ""
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise too_large(self._max_bytes)
        codings = [c for value in _headers(response, "content-encoding") for c in value.split(",")]
        decoding = Decoding(codings, self._max_bytes)
        chunks: list[bytes] = []
        async for raw in response.aiter_stream():
            for piece in decoding.feed(raw):
                chunks.append(piece)
                await asyncio.sleep(0)  # a piece at a time: the loop (and the timeout) get their turn
        for piece in decoding.end():
            chunks.append(piece)
            await asyncio.sleep(0)
        return Fetched(str(url), media_type, charset, b"".join(chunks))


def checked_url(url: str) -> httpx.URL:
    """``url`` as httpx reads it (an IDN host in its ASCII form), if it is an http(s) link with a host."""
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError) as exc:
        raise ClipError(f"That is not a link vaultbot can read ({exc}).", "invalid_url") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ClipError("Only http:// and https:// links can be clipped.", "invalid_url")
    return parsed.copy_with(fragment=None)


def _content_type(header: str) -> tuple[str, str | None]:
    media_type, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return media_type.strip().lower(), charset


def _headers(response: httpcore.Response, name: str) -> list[str]:
    wanted = name.encode("ascii")
    return [value.decode("latin-1") for key, value in response.headers if key.lower() == wanted]


def _header(response: httpcore.Response, name: str) -> str | None:
    found = _headers(response, name)
    return found[0] if found else None


def _describe(exc: Exception) -> str:
    cause = exc.__cause__ or exc.__context__
    text = str(exc) or (str(cause) if cause else "") or type(exc).__name__
    return " ".join(text.split())[:200]
