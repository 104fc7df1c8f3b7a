"""The Telegram channel: python-telegram-bot against the Bot API, over the durable bus."""

from bot.channels.telegram.channel import TelegramChannel, TelegramConflict

__all__ = ["TelegramChannel", "TelegramConflict"]
