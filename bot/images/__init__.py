"""Images the model sees: prepared with Pillow (upright, at most 1,568 px, at most 5 MB) and carried
as content blocks once, then as a line naming the file."""

from bot.images.content import IMAGE_SOURCE, NOT_SENT_AGAIN, SUFFIXES, image_block, is_image_path, label, without_pixels
from bot.images.prepare import MAX_EDGE, MAX_ENCODED_BYTES, MAX_PIXELS, Prepared, Unshowable, prepare

__all__ = [
    "IMAGE_SOURCE",
    "MAX_EDGE",
    "MAX_ENCODED_BYTES",
    "MAX_PIXELS",
    "NOT_SENT_AGAIN",
    "SUFFIXES",
    "Prepared",
    "Unshowable",
    "image_block",
    "is_image_path",
    "label",
    "prepare",
    "without_pixels",
]
