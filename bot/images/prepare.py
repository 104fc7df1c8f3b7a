"""One image made ready for the model: upright, its long edge at most 1,568 px, at most 5 MB once
base64-encoded, in a format the Messages API takes (JPEG, PNG, WebP, GIF).

Pure and synchronous (Pillow decoding is CPU work): callers run :func:`prepare` in a thread. It
never raises on bad input: an image it cannot show comes back as :class:`Unshowable` with a reason
a person can read, and the caller keeps the original file whatever happens.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass

from PIL import (  # the plugins named: Image.open(formats=…) finds only those already registered
    GifImagePlugin,  # noqa: F401
    Image,
    ImageOps,
    JpegImagePlugin,  # noqa: F401
    PngImagePlugin,  # noqa: F401
    UnidentifiedImageError,
    WebPImagePlugin,  # noqa: F401
)

__all__ = ["MAX_EDGE", "MAX_ENCODED_BYTES", "MAX_FILE_BYTES", "MAX_PIXELS", "Prepared", "Unshowable", "prepare"]

# The API scales a longer edge down to this anyway, and charges for pixels it would not use.
MAX_EDGE = 1568
# The API's limit on one image, counted on its base64 form.
MAX_ENCODED_BYTES = 5 * 1024 * 1024
# More than any phone camera takes (48 MP): beyond it, a small file declaring it is a decompression bomb.
MAX_PIXELS = 50_000_000
# Read into memory whole: a file bigger than this is not decoded at all.
MAX_FILE_BYTES = 100 * 1024 * 1024
# What Pillow may take the bytes for (its JPEG reader also gives MPO, as many phone cameras write).
_FORMATS = ("JPEG", "PNG", "WEBP", "GIF")
_MEDIA_TYPES = {"JPEG": "image/jpeg", "MPO": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}
# Modes the API shows as they are; anything else (CMYK, 16-bit, YCbCr…) is converted first.
_PLAIN_MODES = {"L", "RGB", "RGBA", "LA", "P"}
_ORIENTATION = 0x0112
_JPEG_QUALITIES = (85, 70, 50)


@dataclass(frozen=True)
class Prepared:
    """The image as the model receives it. ``note`` says what it should know about what it sees
    (only the first frame of an animation), else None."""

    media_type: str
    data: bytes
    width: int
    height: int
    note: str | None = None

    def base64(self) -> str:
        """The bytes as the API's image source carries them."""
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True)
class Unshowable:
    """Why an image cannot be shown, as the end of a sentence: "… could not be shown: {reason}"."""

    reason: str


def prepare(data: bytes) -> Prepared | Unshowable:
    """``data`` (the bytes of an image file) ready for the model, or why it cannot be."""
    if len(data) > MAX_FILE_BYTES:
        return Unshowable(f"the file is {_mb(len(data))}, over the {_mb(MAX_FILE_BYTES)} I open")
    try:
        image = Image.open(io.BytesIO(data), formats=_FORMATS)
    except UnidentifiedImageError:
        return Unshowable("it is not a JPEG, PNG, WebP or GIF image that can be read")
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        # Pillow's own guard, at about 90 megapixels (a warning) and 180 (an error): above ours either way.
        return Unshowable("it declares more pixels than can safely be decoded (a decompression bomb?)")
    with image:
        width, height = image.size
        if width * height > MAX_PIXELS:
            return Unshowable(
                f"it declares {width}×{height} pixels ({width * height / 1e6:.0f} megapixels), over the "
                f"{MAX_PIXELS / 1e6:.0f} that can safely be decoded (a decompression bomb?)"
            )
        try:
            return _prepare(image, data)
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            # Pillow's ways of saying the data stops early or does not decode ("image file is truncated").
            return Unshowable(f"the file is damaged or cut short ({_first_line(exc)})")


def _prepare(image: Image.Image, data: bytes) -> Prepared:
    fmt = image.format or ""
    frames = getattr(image, "n_frames", 1) if fmt != "MPO" else 1  # an MPO's second frame is a preview
    note = f"It is an animation of {frames} frames; this is its first frame." if frames > 1 else None
    orientation = image.getexif().get(_ORIENTATION, 1)
    if (
        frames == 1
        and orientation in (1, None)
        and max(image.size) <= MAX_EDGE
        and image.mode in _PLAIN_MODES
        and _encoded_size(len(data)) <= MAX_ENCODED_BYTES
    ):
        image.load()  # decoded all the same: a truncated file must not reach the API as it is
        return Prepared(_MEDIA_TYPES[fmt], data, *image.size, note=note)
    if max(image.size) > MAX_EDGE:
        # A JPEG decodes at 1/2, 1/4 or 1/8 scale for a fraction of the time; never below the target.
        scale = MAX_EDGE / max(image.size)
        image.draft(None, (math.ceil(image.width * scale), math.ceil(image.height * scale)))
    image.load()
    return _reencoded(image, orientation, note)


def _reencoded(image: Image.Image, orientation: int, note: str | None) -> Prepared:
    picture = _plain(image)
    if max(picture.size) > MAX_EDGE:
        # Triangle filtering: after the JPEG's own halving the step left is small, and it costs a third
        # less than bicubic for a difference the model cannot use.
        picture.thumbnail((MAX_EDGE, MAX_EDGE), Image.Resampling.BILINEAR)
    if orientation not in (1, None):
        picture.getexif()[_ORIENTATION] = orientation
        picture = ImageOps.exif_transpose(picture)
    if _has_transparency(picture):
        png = _encode(picture, "PNG")
        if _encoded_size(len(png)) <= MAX_ENCODED_BYTES:
            return Prepared("image/png", png, *picture.size, note=note)
        picture = _on_white(picture)
    picture = picture.convert("L" if picture.mode in ("L", "LA") else "RGB")
    for quality in _JPEG_QUALITIES:
        jpeg = _encode(picture, "JPEG", quality=quality)
        if _encoded_size(len(jpeg)) <= MAX_ENCODED_BYTES:
            break
    return Prepared("image/jpeg", jpeg, *picture.size, note=note)


def _plain(image: Image.Image) -> Image.Image:
    """``image`` in L, LA, RGB or RGBA: palettes expanded (resizing a palette picks nearest colours),
    16- and 32-bit greys scaled to 8 bits (a plain conversion clips everything above 255 to white),
    CMYK and the other colour spaces as RGB."""
    mode = image.mode
    if mode in ("L", "LA", "RGB", "RGBA"):
        return image
    if mode in ("P", "PA", "1"):
        return image.convert("RGBA" if "transparency" in image.info or mode == "PA" else "RGB")
    if mode.startswith("I;16") or mode == "I":
        top = 65535 if mode.startswith("I;16") else max(1, image.getextrema()[1])  # type: ignore[index]
        return image.convert("I").point(lambda v: v * (255 / top)).convert("L")
    if mode == "F":
        low, high = image.getextrema()  # type: ignore[misc]
        span = (high - low) or 1.0
        return image.point(lambda v: (v - low) * (255 / span)).convert("L")
    return image.convert("RGBA" if "A" in mode else "RGB")


def _has_transparency(image: Image.Image) -> bool:
    if image.mode not in ("RGBA", "LA"):
        return False
    lowest, _ = image.getchannel("A").getextrema()
    return bool(lowest < 255)  # type: ignore[operator]


def _on_white(image: Image.Image) -> Image.Image:
    background = Image.new("RGB", image.size, "white")
    background.paste(image.convert("RGBA"), mask=image.convert("RGBA").getchannel("A"))
    return background


def _encode(image: Image.Image, fmt: str, **options: int) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def _encoded_size(size: int) -> int:
    return (size + 2) // 3 * 4


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.0f} MB"


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]
