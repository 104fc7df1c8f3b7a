"""Who the bot is: Telegram's answer to ``getMe``, the first call ``vaultbot run`` makes and the one
``vaultbot doctor`` makes to check the token.

What goes wrong is said in one line that names the setting to fix and never shows the token:
python-telegram-bot's own error for a refused token quotes it, and an address the token is joined
to carries it.
"""

from __future__ import annotations

import httpx
from telegram import Bot, User
from telegram.error import InvalidToken, NetworkError, RetryAfter, TelegramError

from bot.channels.telegram.errors import TelegramRefused, TelegramUnreachable, retry_after_seconds
from bot.redact import without_credentials, without_secret
from bot.settings import TelegramSettings

__all__ = ["introduce"]

BOTFATHER = "the token @BotFather gave you"
# What is shown of an answer at most: a server that is not the Bot API may answer with a whole page.
SAID_CHARS = 160


async def introduce(bot: Bot, settings: TelegramSettings) -> User:
    """Initialise ``bot`` (python-telegram-bot asks ``getMe`` then) and return the bot's user.

    Raises :class:`TelegramRefused` when the answer says the token or the address is wrong, and
    :class:`TelegramUnreachable` when there is no answer yet (the network, Telegram's servers, a
    request to wait)."""
    assert settings.token is not None
    token = settings.token.get_secret_value()
    where = without_credentials(settings.base_url)
    try:
        await bot.initialize()
    except InvalidToken as exc:
        # 401 for a well-formed token Telegram does not know, 404 for a malformed one or a wrong address.
        said = _said(exc.__cause__ or "refused", token)
        raise TelegramRefused(
            f"Telegram's Bot API at {where} refused the bot token ({said}): check VAULTBOT_TELEGRAM__TOKEN, "
            f"{BOTFATHER}, and VAULTBOT_TELEGRAM__BASE_URL"
        ) from None
    except RetryAfter as exc:
        wait = retry_after_seconds(exc)
        raise TelegramUnreachable(f"Telegram asked to wait {wait:.0f} s", retry_after=wait) from None
    except NetworkError as exc:
        said = _said(exc, token)
        if exc.__cause__ is not None and not isinstance(exc.__cause__, (httpx.HTTPError, TelegramError)):
            # Not the network, nor an answer (an error page, which Telegram's proxy gives in an outage):
            # the HTTP client could not even make the request of this address.
            raise TelegramRefused(
                f"cannot ask Telegram's Bot API at {where} ({said}): check VAULTBOT_TELEGRAM__BASE_URL"
            ) from None
        raise TelegramUnreachable(f"Telegram's Bot API at {where} cannot be reached ({said})") from None
    except TelegramError as exc:
        said = _said(exc, token)
        raise TelegramRefused(
            f"{where} does not answer as Telegram's Bot API does ({said}): check VAULTBOT_TELEGRAM__BASE_URL"
        ) from None
    return bot.bot


def _said(answer: object, token: str) -> str:
    """What an error says, on one short line, without the token (an error page may echo the address)."""
    said = " ".join(without_secret(str(answer), token).split())
    return said if len(said) <= SAID_CHARS else said[: SAID_CHARS - 1] + "…"
