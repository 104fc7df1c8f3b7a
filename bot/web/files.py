"""Images from the vault, as the run page shows the photos the model saw: only image files, only
inside the vault and out of its dot-folders (the same confinement as notes), read-only."""

from __future__ import annotations

import asyncio
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response

from bot.images import is_image_path
from bot.web.sources import sources
from vault import VaultError
from vault.paths import confine

_MEDIA_TYPES = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".webp": "image/webp",
    ".gif": "image/gif",
}


async def vault_image(request: Request) -> Response:
    """The image at a vault-relative path; 404 for anything else, outside the vault or hidden."""
    review = sources(request)
    path = request.path_params["path"]
    found = await asyncio.to_thread(_locate, review.settings.vault.path, path) if is_image_path(path) else None
    if found is None:
        return review.renderer.page(request, "missing.html", {"what": f"image {path}"}, status=404)
    return FileResponse(found, media_type=_MEDIA_TYPES[found.suffix.lower()])


def _locate(root: Path, path: str) -> Path | None:
    try:
        found = confine(root.resolve(), path)
    except VaultError:
        return None
    return found if found.is_file() and is_image_path(found.name) else None
