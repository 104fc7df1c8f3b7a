"""Links clipped into notes: safe fetching, main-content extraction, Web Clipper's front matter."""

from bot.clip.addresses import Resolver, resolve
from bot.clip.clipper import EXCERPT_CHARS, Clipper, Clipping
from bot.clip.errors import AddressRefused, ClipError

__all__ = ["EXCERPT_CHARS", "AddressRefused", "ClipError", "Clipper", "Clipping", "Resolver", "resolve"]
