"""Turning a view's plain data into a page: HTML through Jinja2 (autoescaped), or its JSON twin."""

from __future__ import annotations

import json
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from bot.clock import local_time
from bot.store import short_id
from bot.web.words import fields, words

__all__ = ["Renderer"]

_TEMPLATES = Path(__file__).parent / "templates"
# Raw HTML in a note is shown as text, and markdown-it refuses javascript: and data: links itself.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


class Renderer:
    """Renders pages in the user's time zone, each time saying which zone it is in."""

    def __init__(self, tz: tzinfo) -> None:
        self._tz = tz
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
        )
        env.filters.update(
            when=self.when,
            clock=self.clock,
            by_day=self.by_day,
            number=_number,
            fields=fields,
            words=words,
            markdown=_markdown,
            query=_query,
            short_id=short_id,
        )
        self._templates = Jinja2Templates(env=env, context_processors=[_addresses])

    def page(self, request: Request, template: str, data: dict[str, Any], *, status: int = 200) -> Response:
        """The page, or with ``?format=json`` the same data as JSON."""
        if request.query_params.get("format") == "json":
            body = json.dumps(data, ensure_ascii=False, default=str, indent=1)
            return Response(body, status_code=status, media_type="application/json")
        return self._templates.TemplateResponse(request, template, data, status_code=status)

    def local(self, iso: str) -> datetime:
        """A stored UTC time in the user's zone."""
        return datetime.fromisoformat(iso).astimezone(self._tz)

    def when(self, iso: str | None) -> str:
        """``2026-11-23 10:41 CET``."""
        return local_time(iso, self._tz) if iso else "–"

    def clock(self, iso: str | None) -> str:
        """``10:41:07 CET`` (the day is the heading above it)."""
        return local_time(iso, self._tz, seconds=True, day=False) if iso else "–"

    def by_day(self, entries: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
        """Entries (newest first) grouped under their local day, ``Monday 23 November 2026``."""
        days: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            day = self.local(entry["created_at"])
            days.setdefault(f"{day:%A} {day.day} {day:%B %Y}", []).append(entry)
        return list(days.items())


def _addresses(request: Request) -> dict[str, str]:
    """``root``, the public address's path that every link starts with (``""`` at a host's root), and
    ``here``, the page's own address without it (``/runs``)."""
    # Inside a Mount, root_path has the mount's path too; app_root_path is the app's own.
    root: str = request.scope.get("app_root_path", request.scope.get("root_path", ""))
    return {"root": root, "here": request.url.path.removeprefix(root) or "/"}


def _number(value: float | int | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _markdown(text: str) -> Markup:
    # The one place HTML is trusted: markdown-it's own output, with raw HTML disabled above.
    return Markup(_MARKDOWN.render(text))


def _query(params: dict[str, Any], **changes: Any) -> str:
    """A query string from ``params`` with ``changes``, leaving out empty values."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})
