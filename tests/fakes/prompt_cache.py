"""Prompt-cache accounting as Anthropic documents it, for the fake Messages API.

The prompt is the request's blocks in the API's order: tools, then system, then every message's
content blocks. The rules modelled:

- the prefix up to each block carrying ``cache_control`` is written to the cache (at most four
  breakpoints a request), unless it is shorter than ``MIN_CACHEABLE_TOKENS``;
- a request reads the longest stored prefix that ends at one of its breakpoints or at a block
  boundary within ``LOOKBACK_BLOCKS`` blocks before one;
- ``cache_control`` itself is not part of the prefix; everything else is, byte for byte (JSON key
  order included), and a message's string content is the same as one text block.

Tokens are counted deterministically, one per ``CHARS_PER_TOKEN`` characters of each block's JSON;
an image block (also inside a tool result) costs what the API documents, width × height / 750 of
the decoded image, not its base64.
Entries never expire: the benchmark and the tests run well inside the five-minute lifetime.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import threading
from dataclasses import dataclass
from typing import Any

from PIL import Image

MAX_BREAKPOINTS = 4
MIN_CACHEABLE_TOKENS = 1024
LOOKBACK_BLOCKS = 20
CHARS_PER_TOKEN = 4
PIXELS_PER_IMAGE_TOKEN = 750


class TooManyBreakpoints(ValueError):
    """The API answers 400 to a request with more than four ``cache_control`` blocks."""


@dataclass(frozen=True)
class CacheUsage:
    """One request's input tokens as the API reports them."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


@dataclass(frozen=True)
class _Block:
    key: str  # what the block contributes to the prefix
    tokens: int
    breakpoint: bool


class PromptCache:
    """The stored prefixes, shared by every request to one fake server."""

    def __init__(self) -> None:
        self._stored: set[str] = set()
        self._lock = threading.Lock()

    def account(self, body: dict[str, Any]) -> CacheUsage:
        """Read and write the cache for one request body; return its usage."""
        blocks = list(_blocks(body))
        breakpoints = [i for i, b in enumerate(blocks) if b.breakpoint]
        if len(breakpoints) > MAX_BREAKPOINTS:
            raise TooManyBreakpoints(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided.")
        hashes, totals = _prefixes(blocks)
        with self._lock:
            read = 0
            for end in breakpoints:
                for i in range(end, max(-1, end - LOOKBACK_BLOCKS - 1), -1):
                    if hashes[i] in self._stored:
                        read = max(read, totals[i])
                        break
            written = 0
            for end in breakpoints:
                if totals[end] >= MIN_CACHEABLE_TOKENS:
                    self._stored.add(hashes[end])
                    written = max(written, totals[end])
        creation = max(0, written - read)
        total = totals[-1] if totals else 0
        return CacheUsage(total - read - creation, read, creation)


def count_tokens(text: str) -> int:
    """The double's deterministic token count."""
    return len(text) // CHARS_PER_TOKEN + 1


def _blocks(body: dict[str, Any]) -> Any:
    for tool in body.get("tools") or []:
        yield _block("tool", tool)
    system = body.get("system") or []
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        yield _block("system", block)
    for message in body.get("messages") or []:
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            yield _block(message["role"], block)


def _block(role: str, block: dict[str, Any]) -> _Block:
    bare = {k: v for k, v in block.items() if k != "cache_control"}
    key = role + ":" + json.dumps(bare, ensure_ascii=False)
    return _Block(key, _tokens(role, bare), "cache_control" in block)


def _tokens(role: str, block: dict[str, Any]) -> int:
    if block.get("type") == "image":
        return image_tokens(block)
    inner = block.get("content")
    if block.get("type") == "tool_result" and isinstance(inner, list):
        images = [b for b in inner if b.get("type") == "image"]
        rest = {**block, "content": [b for b in inner if b.get("type") != "image"]}
        return count_tokens(role + ":" + json.dumps(rest, ensure_ascii=False)) + sum(map(image_tokens, images))
    return count_tokens(role + ":" + json.dumps(block, ensure_ascii=False))


def image_tokens(block: dict[str, Any]) -> int:
    """What the API charges for one base64 image block: its pixels / 750."""
    try:
        with Image.open(io.BytesIO(base64.b64decode(block["source"]["data"], validate=True))) as image:
            width, height = image.size
    except (KeyError, TypeError, binascii.Error, OSError) as exc:
        raise InvalidImage(f"Could not process image: {exc}") from exc
    return math.ceil(width * height / PIXELS_PER_IMAGE_TOKEN)


class InvalidImage(ValueError):
    """The API answers 400 to an image block it cannot decode."""


def _prefixes(blocks: list[_Block]) -> tuple[list[str], list[int]]:
    """For each block, the hash of the prompt up to and including it, and its token count."""
    digest = hashlib.sha256()
    hashes, totals, total = [], [], 0
    for block in blocks:
        digest.update(block.key.encode() + b"\0")
        hashes.append(digest.copy().hexdigest())
        total += block.tokens
        totals.append(total)
    return hashes, totals
