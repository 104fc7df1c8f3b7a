"""The images that came with a message, as the model sees them: each prepared from its file in the
vault (in a thread: decoding is CPU work) and given to the model as an image block after a label
naming its path; one that cannot be shown becomes a line saying why, and its file stays as it is.

Nothing here is stored but the audit step: a re-run after a crash prepares the same files again and
gets the same blocks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.images import Prepared, Unshowable, image_block, label, prepare
from bot.store import Store
from bot.tools import ToolContext
from vault import VaultError
from vault.paths import confine

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Seen:
    """What the model is given: ``blocks`` go before the message's text, ``lines`` after it (the
    images it could not be shown, and why)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


class Photos:
    """Shows a message's images to the model, one audit step per message."""

    def __init__(self, *, store: Store, vault_root: Path) -> None:
        self._store = store
        self._root = vault_root.resolve()

    async def show(self, paths: Sequence[str], context: ToolContext) -> Seen:
        """The blocks and lines for ``paths`` (vault-relative), recorded as the run's ``images`` step."""
        if not paths:
            return Seen()
        started = time.perf_counter()
        seen = Seen()
        shown: list[dict[str, Any]] = []
        refused: list[dict[str, str]] = []
        for path in paths:
            try:
                outcome = await asyncio.to_thread(load_image, self._root, path)
            except Exception:  # a bug in preparing one image must not cost the message its answer
                log.exception("! image %s could not be prepared run=%s", path, context.run_id)
                outcome = Unshowable("an internal error, which was logged")
            if isinstance(outcome, Prepared):
                seen.blocks.extend([label(path, outcome), image_block(outcome)])
                shown.append(
                    {
                        "path": path,
                        "media_type": outcome.media_type,
                        "width": outcome.width,
                        "height": outcome.height,
                        "bytes": len(outcome.data),
                    }
                )
            else:
                seen.lines.append(
                    f"({path} could not be shown to you: {outcome.reason}. Its file is kept in the vault.)"
                )
                refused.append({"path": path, "reason": outcome.reason})
        await self._store.add_step(
            context.run_id,
            kind="event",
            name="images",
            input={"images": list(paths)},
            output={"shown": shown, "not_shown": refused},
            is_error=bool(refused),
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        return seen


def load_image(root: Path, path: str) -> Prepared | Unshowable:
    """The image at vault-relative ``path`` under resolved ``root``, prepared, or why it cannot be shown."""
    try:
        data = confine(root, path).read_bytes()
    except VaultError as exc:
        return Unshowable(str(exc))
    except OSError as exc:
        return Unshowable(f"its file could not be read from the vault ({exc.strerror or type(exc).__name__})")
    return prepare(data)
