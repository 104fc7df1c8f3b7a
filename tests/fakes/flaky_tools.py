"""A dispatcher double: the six tools over an in-memory vault, failing on chosen calls.

Stands in where the point is the runner's judgement, not the disk: ``fail("vault_write", on=2)``
makes the second vault_write call fail with the given error, ``fail("vault_write", always=True)``
makes every one fail.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from bot.tools import Dispatcher, ToolContext, ToolOutcome, failure


class FlakyTools:
    """Satisfies the runner's use of ``Dispatcher``: ``definitions()`` and ``call()``."""

    def __init__(self, real: Dispatcher) -> None:
        self._definitions = real.definitions()
        self.notes: dict[str, str] = {}
        self.sent: list[str] = []
        self.calls: Counter[str] = Counter()
        self._faults: dict[str, tuple[int | None, dict[str, Any]]] = {}

    def fail(
        self,
        tool: str,
        *,
        on: int | None = None,
        always: bool = False,
        error_type: str = "storage_error",
        retryable: bool = True,
    ) -> None:
        """Make call number ``on`` (1-based) of ``tool`` fail, or every call with ``always``."""
        self._faults[tool] = (
            None if always else on,
            failure(f"{tool} failed (injected)", error_type, retryable=retryable),
        )

    def definitions(self) -> list[dict[str, Any]]:
        return self._definitions

    async def call(self, name: str, raw_input: Any, context: ToolContext) -> ToolOutcome:
        self.calls[name] += 1
        fault = self._faults.get(name)
        if fault is not None and (fault[0] is None or fault[0] == self.calls[name]):
            return ToolOutcome(dict(fault[1]), is_error=True)
        args = raw_input or {}
        if name == "vault_write":
            path = f"{args.get('folder', '')}/{args.get('title', '')}.md".lstrip("/")
            unchanged = self.notes.get(path) == args.get("content")
            self.notes[path] = args.get("content", "")
            return ToolOutcome({"success": True, "path": path, "unchanged": unchanged}, is_error=False)
        if name == "vault_read":
            path = args.get("path", "")
            if path not in self.notes:
                return ToolOutcome(failure(f"No note at {path}", "not_found"), is_error=True)
            return ToolOutcome({"success": True, "path": path, "content": self.notes[path]}, is_error=False)
        if name == "send_message":
            self.sent.append(args.get("text", ""))
        return ToolOutcome({"success": True}, is_error=False)
