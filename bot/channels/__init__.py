"""Adapters between the outside world and the bus. Channels never call the runner."""

from bot.channels.lifecycle import Channel, Lifecycle
from bot.channels.pacing import Pacer
from bot.channels.seats import Seat, take_seat
from bot.channels.terminal import OutputClosed, TerminalChannel, read_lines

__all__ = ["Channel", "Lifecycle", "OutputClosed", "Pacer", "Seat", "TerminalChannel", "read_lines", "take_seat"]
