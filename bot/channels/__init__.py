"""Adapters between the outside world and the bus. Channels never call the runner."""

from bot.channels.terminal import OutputClosed, TerminalChannel, read_lines

__all__ = ["OutputClosed", "TerminalChannel", "read_lines"]
