"""Fetching a link safely: only http(s), each hop's address checked, at most five redirects, only
HTML, plain text or PDF, at most ``max_bytes`` counted after decompression, all within ``timeout``.

A page that is too big is refused, never cut: a clipping that silently lost its end would be a
note that lies about the page.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpcore
import httpx

from bot.clip.addresses import CheckedBackend, Resolver, Rule, refusal, resolve
from bot.clip.errors import ClipError

MAX_REDIRECTS = 5
CONTENT_TYPES = ("text/html", "text/plain", "application/pdf")
_HEADERS = {
    "User-Agent": "Mozilla/5.0 (compatible; vaultbot clip_link)",
    "Accept": "text/html,text/plain;q=0.9,application/pdf;q=0.8",
}


@dataclass(frozen=True)
class Fetched:
    """A page as it arrived: the address it came from at last (after redirects), its media type,
    the charset its headers named (None when they named none) and its bytes, decompressed."""

    url: str
    media_type: str
    charset: str | None
    data: bytes


class _CheckedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a connection pool that connects through :class:`CheckedBackend`."""

    def __init__(self, backend: CheckedBackend) -> None:
        super().__init__(trust_env=False)
        # httpx takes no network backend of its own; its pool (the same class, TLS context and HTTP/1.1)
        # does. Proxies are off (trust_env): a proxy would connect to addresses nobody checked.
        self._pool = httpcore.AsyncConnectionPool(ssl_context=httpx.create_ssl_context(), network_backend=backend)


class Fetcher:
    """Fetches pages for clipping; one client (and connection pool) for its life. :meth:`close` it."""

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
        transport = _CheckedTransport(CheckedBackend(allow_private=allow_private, resolver=resolver, rule=rule))
        self._client = httpx.AsyncClient(
            transport=transport, timeout=httpx.Timeout(timeout), headers=_HEADERS, trust_env=False
        )

    async def close(self) -> None:
        """Close the connections."""
        await self._client.aclose()

    async def fetch(self, url: str) -> Fetched:
        """The page at ``url``, or :class:`ClipError` saying why not."""
        try:
            async with asyncio.timeout(self._timeout):
                return await self._follow(checked_url(url))
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise ClipError(
                f"The page did not arrive within {self._timeout:g} seconds (VAULTBOT_CLIP__TIMEOUT).",
                "timeout",
                retryable=True,
            ) from exc
        except httpx.HTTPError as exc:
            message = f"The page could not be fetched ({_describe(exc)})."
            raise ClipError(message, "fetch_failed", retryable=True) from exc

    async def _follow(self, url: httpx.URL) -> Fetched:
        seen = {str(url)}
        for _ in range(MAX_REDIRECTS + 1):
            async with self._client.stream("GET", url) as response:
                if response.is_redirect:
                    url = checked_url(str(url.join(response.headers.get("location", ""))))
                    if str(url) in seen:
                        raise ClipError("The page redirects in a loop, so there is nothing to clip.", "redirect_loop")
                    seen.add(str(url))
                    continue
                return await self._body(url, response)
        message = f"The page redirects more than {MAX_REDIRECTS} times; vaultbot stops there."
        raise ClipError(message, "too_many_redirects")

    async def _body(self, url: httpx.URL, response: httpx.Response) -> Fetched:
        if response.status_code >= 400:
            raise ClipError(
                f"The site answered {response.status_code} {response.reason_phrase}.".replace(" .", "."),
                "http_error",
                retryable=response.status_code >= 500 or response.status_code == 429,
            )
        media_type, charset = _content_type(response.headers.get("content-type", ""))
        if media_type not in CONTENT_TYPES:
            raise ClipError(
                f"The link is {media_type or 'of no declared type'}, not a web page, text or PDF: not clipped.",
                "unsupported_content",
            )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise self._too_big()
        received = 0
        chunks: list[bytes] = []
        async for chunk in response.aiter_bytes():  # decompressed: a gzip bomb counts at its real size
            received += len(chunk)
            if received > self._max_bytes:
                raise self._too_big()
            chunks.append(chunk)
        return Fetched(str(url), media_type, charset, b"".join(chunks))

    def _too_big(self) -> ClipError:
        limit = self._max_bytes
        size = f"{limit / (1024 * 1024):.1f} MB" if limit >= 1024 * 1024 else f"{limit:,} bytes"
        return ClipError(
            f"The page is larger than {size} (VAULTBOT_CLIP__MAX_BYTES); it is not clipped rather than cut.",
            "too_large",
        )


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


def _describe(exc: httpx.HTTPError) -> str:
    cause = exc.__cause__ or exc.__context__
    text = str(exc) or (str(cause) if cause else "") or type(exc).__name__
    return " ".join(text.split())[:200]
