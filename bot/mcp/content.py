"""A server's ``CallToolResult`` as a tool result: the JSON the audit trail keeps, and the images the
model sees beside it.

Text stays text; an embedded resource becomes its text (a binary one is named, not shown); an image
in a format the model reads goes to the model as an image block and is only described in the JSON,
so the audit trail and history never hold its pixels. ``isError`` is a failure with the server's
text. Every string is masked (``bot.mcp.secrets``) before anyone sees it.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from bot.mcp.secrets import Secrets
from bot.tools import ContentResult, ToolError

# The image types and size the Messages API takes in an image block.
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
MAX_IMAGE_BYTES = 5 * 1024 * 1024
# A bigger result is refused, not cut: a part of it could mislead more than no answer.
MAX_RESULT_CHARS = 5 * 1024 * 1024


def to_result(result: CallToolResult, secrets: Secrets, *, server: str) -> ContentResult:
    """The success result of ``result``; raises ``ToolError`` for ``isError`` or a result too big to pass on."""
    size = sum(_size(block) for block in result.content)
    if size > MAX_RESULT_CHARS:
        raise ToolError(
            f"The MCP server {server} answered {size / 1_000_000:.1f} MB, more than the "
            f"{MAX_RESULT_CHARS / 1_000_000:.1f} MB a tool result may be; ask for less.",
            error_type="too_large",
        )
    if result.is_error:
        text = "\n".join(b.text for b in result.content if isinstance(b, TextContent)) or "no reason given"
        raise ToolError(
            secrets.mask(f"The MCP server {server} reported an error: {text}"),
            error_type="server_error",
            untrusted=source(server),
        )
    content: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for block in result.content:
        described, image = _block(block)
        content.append(secrets.mask_all(described))
        if image is not None:
            images.append(image)
    return ContentResult({"success": True, "content": content}, images, untrusted=source(server))


def source(server: str) -> str:
    """How the label of a server's words names them (``bot.consent``)."""
    return f"MCP server {server}"


def _block(block: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}, None
    if isinstance(block, ImageContent):
        return _image(block)
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return {"type": "resource", "uri": str(resource.uri), "text": resource.text}, None
        assert isinstance(resource, BlobResourceContents)
        kind = resource.mime_type or "binary data"
        return {"type": "resource", "uri": str(resource.uri), "note": f"{kind}, not shown"}, None
    if isinstance(block, ResourceLink):
        return {"type": "resource_link", "uri": str(block.uri), "name": block.name}, None
    if isinstance(block, AudioContent):
        return {"type": "audio", "note": f"{block.mime_type}, not shown: the model cannot hear it"}, None
    return {"type": str(getattr(block, "type", "unknown")), "note": "content of a kind vaultbot does not pass on"}, None


def _image(block: ImageContent) -> tuple[dict[str, Any], dict[str, Any] | None]:
    described: dict[str, Any] = {"type": "image", "mime_type": block.mime_type}
    try:
        size = len(base64.b64decode(block.data, validate=True))
    except (binascii.Error, ValueError):
        return {**described, "note": "not shown: the data is not base64"}, None
    described["bytes"] = size
    if block.mime_type not in IMAGE_TYPES:
        return {**described, "note": "not shown: the model reads JPEG, PNG, GIF and WebP only"}, None
    if size > MAX_IMAGE_BYTES:
        return {**described, "note": "not shown: larger than the 5 MB the model takes"}, None
    image = {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}
    return {**described, "note": "shown to you below"}, image


def _size(block: Any) -> int:
    for field in ("text", "data"):
        value = getattr(block, field, None)
        if isinstance(value, str):
            return len(value)
    resource = getattr(block, "resource", None)
    return len(getattr(resource, "text", None) or getattr(resource, "blob", None) or "")
