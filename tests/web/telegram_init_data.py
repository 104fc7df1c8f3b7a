"""Init data as Telegram signs it, written straight from Telegram's documentation and separately from
``bot.web.init_data``: the data-check string is the fields but ``hash`` as sorted ``key=value``
lines; ``hash`` is the hex HMAC-SHA256 of it under HMAC-SHA256(key="WebAppData", msg=bot token)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import quote, urlencode


def signed(
    bot_token: str,
    *,
    user_id: int = 42,
    auth_date: int | None = None,
    extra: dict[str, str] | None = None,
) -> str:
    """``tgWebAppData`` for ``user_id``, signed with ``bot_token`` at ``auth_date`` (default: now)."""
    user = {"id": user_id, "first_name": "Ann", "username": "ann", "language_code": "en"}
    fields = {
        "query_id": "AAHdF6IQAAAAAN0XohDhrOrc",
        "user": json.dumps(user, separators=(",", ":")),
        "auth_date": str(int(time.time()) if auth_date is None else auth_date),
        **(extra or {}),
    }
    check = "\n".join(f"{key}={fields[key]}" for key in sorted(fields))
    secret = hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()
    digest = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return urlencode({**fields, "hash": digest}, quote_via=quote)


def fragment(init_data: str, theme: dict[str, Any] | None = None) -> str:
    """The fragment Telegram puts on the Mini App's address."""
    params = {"tgWebAppData": init_data, "tgWebAppVersion": "8.0", "tgWebAppPlatform": "android"}
    if theme is not None:
        params["tgWebAppThemeParams"] = json.dumps(theme)
    return "#" + urlencode(params, quote_via=quote)
