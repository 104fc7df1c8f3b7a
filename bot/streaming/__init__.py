"""Replies as they are written: the ephemeral progress hub between the runner, which writes a reply's
text as the model streams it, and the channels that show it early (Telegram drafts, the terminal).
Nothing here is durable: the reply itself always goes through the bus's outbox."""

from bot.streaming.hub import Draft, DraftWriter, Progress, Subscription

__all__ = ["Draft", "DraftWriter", "Progress", "Subscription"]
