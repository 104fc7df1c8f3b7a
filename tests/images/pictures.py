"""Images for the photo tests, made with Pillow: four coloured quadrants (which way up a picture is),
every EXIF orientation, and the broken kinds a phone or a stranger might send."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from typing import Any

from PIL import Image

from tests.fakes.anthropic_server import image_blocks

# Top-left, top-right, bottom-left, bottom-right of an upright picture.
QUADRANTS = ((230, 30, 30), (30, 200, 30), (30, 30, 230), (240, 220, 30))
ORIENTATION = 0x0112
# How to store an upright picture so that a viewer applying EXIF orientation N shows it upright
# (the inverse of each orientation's transform, from the EXIF specification's table).
STORED_AS = {
    1: None,
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}


def upright(size: tuple[int, int] = (300, 200)) -> Image.Image:
    """A picture whose four quadrants say which way up it is."""
    width, height = size
    picture = Image.new("RGB", size)
    for i, colour in enumerate(QUADRANTS):
        left, top = (i % 2) * width // 2, (i // 2) * height // 2
        picture.paste(colour, (left, top, left + width // 2, top + height // 2))
    return picture


def jpeg(picture: Image.Image, orientation: int = 1, quality: int = 90) -> bytes:
    """``picture`` as a JPEG a camera would write when held with ``orientation``."""
    transform = STORED_AS[orientation]
    stored = picture.transpose(transform) if transform is not None else picture
    exif = Image.Exif()
    exif[ORIENTATION] = orientation
    out = io.BytesIO()
    stored.save(out, "JPEG", quality=quality, exif=exif.tobytes())
    return out.getvalue()


def encoded(picture: Image.Image, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    picture.save(out, fmt, **options)
    return out.getvalue()


def quadrant_colours(picture: Image.Image) -> list[tuple[int, int, int]]:
    """The colour at the middle of each quadrant, top-left first."""
    rgb = picture.convert("RGB")
    width, height = rgb.size
    return [rgb.getpixel(((i % 2) * width // 2 + width // 4, (i // 2) * height // 2 + height // 4)) for i in range(4)]  # type: ignore[misc]


def close(colour: tuple[int, ...], expected: tuple[int, ...], tolerance: int = 40) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(colour, expected, strict=True))


def decoded(block: dict[str, Any]) -> Image.Image:
    """An image block as the model would see it."""
    picture = Image.open(io.BytesIO(base64.b64decode(block["source"]["data"])))
    assert picture.format is not None and f"image/{picture.format.lower()}" == block["source"]["media_type"]
    return picture


def seen_images(body: dict[str, Any]) -> list[Image.Image]:
    """Every image in a request to the Messages API, decoded, in order."""
    return [decoded(block) for message in body["messages"] for block in image_blocks(message["content"])]


def text_of(message: dict[str, Any]) -> str:
    """A message's text, its text blocks joined."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(block["text"] for block in content if block.get("type") == "text")


def png_bomb(width: int, height: int) -> bytes:
    """A valid, tiny PNG of ``width`` × ``height`` black 1-bit pixels: kilobytes on disk, gigabytes decoded."""
    row = b"\0" * (1 + (width + 7) // 8)
    squeeze = zlib.compressobj(9)
    data = b"".join(squeeze.compress(row) for _ in range(height)) + squeeze.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def animated_gif(colours: list[tuple[int, int, int]]) -> bytes:
    frames = [Image.new("RGB", (120, 80), colour) for colour in colours]
    return encoded(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
