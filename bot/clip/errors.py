"""Why a link could not be clipped.

``ClipError`` carries a sentence a person can act on, an ``error_type`` the model and the error
tracker can tell apart, and whether trying again may help (a timeout may pass; a refused address
or an oversized page will not)."""

from __future__ import annotations


class ClipError(Exception):
    """A link that could not be clipped, and why."""

    def __init__(self, message: str, error_type: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.retryable = retryable


class AddressRefused(ClipError):
    """The address a link leads to is one vaultbot does not fetch (VAULTBOT_CLIP__ALLOW_PRIVATE)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "address_refused")


def too_large(limit: int) -> ClipError:
    """The refusal of a page over ``limit`` bytes (VAULTBOT_CLIP__MAX_BYTES), counted after every layer of decoding."""
    size = f"{limit / (1024 * 1024):.1f} MB" if limit >= 1024 * 1024 else f"{limit:,} bytes"
    return ClipError(
        f"The page is larger than {size} (VAULTBOT_CLIP__MAX_BYTES); it is not clipped rather than cut.", "too_large"
    )
