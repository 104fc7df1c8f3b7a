"""Interpreting front matter fields: tags, titles and timestamps."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

_TAG_SPLIT = re.compile(r"[,\s]+")


def now() -> dt.datetime:
    """The current UTC time to the second, as stored in front matter."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def iso(moment: dt.datetime) -> str:
    """``moment`` as ``2026-11-22T21:05:03Z``."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_datetime(value: Any) -> dt.datetime | None:
    """A UTC datetime from a front matter value (YAML date, datetime or ISO string), if it is one."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    # Naive times in hand-written notes are taken as UTC; there is nothing better to go on.
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


def clean_tags(tags: Any) -> list[str]:
    """Tags as a de-duplicated list of strings without ``#``, from a list or an Obsidian-style string."""
    if isinstance(tags, str):
        raw = _TAG_SPLIT.split(tags)
    elif isinstance(tags, list):
        raw = [str(tag) for tag in tags]
    else:
        raw = []
    cleaned: list[str] = []
    for tag in raw:
        tag = tag.strip().lstrip("#").strip()
        if tag and tag not in cleaned:
            cleaned.append(tag)
    return cleaned


def title_of(meta: dict[str, Any], stem: str) -> str:
    """The front matter title if there is a usable one, else the file name."""
    title = meta.get("title")
    return title.strip() if isinstance(title, str) and title.strip() else stem


def clean_aliases(aliases: Any) -> list[str]:
    """Obsidian's ``aliases`` (a list or a single string) as a list of non-empty strings."""
    if isinstance(aliases, str):
        aliases = [aliases]
    if not isinstance(aliases, list):
        return []
    return [str(alias).strip() for alias in aliases if str(alias).strip()]
