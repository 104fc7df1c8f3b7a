"""Images as Messages API content: the block the model sees once, and the line that stands for it
in history afterwards, so a conversation never sends the same pixels twice."""

from __future__ import annotations

from typing import Any

from bot.consent import Untrusted
from bot.consent import label as label_of
from bot.images.prepare import Prepared

__all__ = ["IMAGE_SOURCE", "NOT_SENT_AGAIN", "SUFFIXES", "image_block", "is_image_path", "label", "without_pixels"]

# What an image file in the vault may be called to be shown as one (the API's four formats).
SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif")
NOT_SENT_AGAIN = "(The image was shown here once; it is not sent again. vault_read its path to see it again.)"


def is_image_path(path: str) -> bool:
    """Whether a vault path names an image the model can be shown."""
    return path.lower().endswith(SUFFIXES)


def image_block(image: Prepared) -> dict[str, Any]:
    """The image as a base64 image content block."""
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.base64()}}


# How the label before an image names its source: pixels from anywhere may carry someone else's words.
IMAGE_SOURCE = "image"


def label(path: str, image: Prepared) -> dict[str, Any]:
    """The text block before an image: its vault path (what names it once the pixels are gone from
    history) and what the model should know about what it sees, inside the label of someone else's
    words. Text in an image (a screenshot, a photo of a letter) was written by whoever made it, so an
    image taints the run it is given to as a document does, and so does this block in history; the
    person's caption is a text of its own and stays theirs."""
    text = f"[Image: {path}]" if image.note is None else f"[Image: {path}. {image.note}]"
    return {"type": "text", "text": label_of(Untrusted(text, IMAGE_SOURCE))}


def without_pixels(content: Any) -> Any:
    """``content`` (a message's, or a tool result's) with each image block replaced by a line saying
    it was shown once; the label before it still names its path. Anything else is returned as it is."""
    if not isinstance(content, list) or not any(_holds_pixels(block) for block in content):
        return content
    return [_without(block) for block in content]


def _holds_pixels(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") == "image":
        return True
    return (
        block.get("type") == "tool_result"
        and isinstance(block.get("content"), list)
        and any(_holds_pixels(inner) for inner in block["content"])
    )


def _without(block: Any) -> Any:
    if not _holds_pixels(block):
        return block
    if block["type"] == "image":
        return {"type": "text", "text": NOT_SENT_AGAIN}
    return {**block, "content": [_without(inner) for inner in block["content"]]}
