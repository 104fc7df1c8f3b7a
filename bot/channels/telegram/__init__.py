"""The Telegram channel: python-telegram-bot against the Bot API, over the durable bus.

``channel`` wires it together; ``receiver`` turns updates into inbound messages, ``sender``
delivers the outbox and run events, ``drafts`` shows replies as they are written, ``indicator``
shows "typing…", ``render`` turns Markdown into Telegram messages, ``updates`` reads ptb's
objects, ``access`` decides who is served, ``identity`` asks Telegram who the bot is (or says in
one line why it cannot), and ``webhook`` is the optional webhook server.
"""

from bot.channels.telegram.channel import TelegramChannel
from bot.channels.telegram.errors import TelegramConflict, TelegramRefused, TelegramUnreachable
from bot.channels.telegram.identity import introduce

__all__ = ["TelegramChannel", "TelegramConflict", "TelegramRefused", "TelegramUnreachable", "introduce"]
