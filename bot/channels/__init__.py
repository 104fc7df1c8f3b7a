"""Adapters between the outside world and the bus. Channels never call the runner."""

from bot.channels.terminal import TerminalChannel, read_lines

__all__ = ["TerminalChannel", "read_lines"]
