"""The inbound handler: a router over a message's walk, and a module for each job on the way."""

from bot.runner.handler.inputs import Inputs
from bot.runner.handler.recorder import Audit
from bot.runner.handler.router import TurnHandler
from bot.runner.handler.running import UNREACHABLE
from bot.runner.handler.wiring import Assistant, StandIns, Storage, Window

__all__ = [
    "UNREACHABLE",
    "Assistant",
    "Audit",
    "Inputs",
    "StandIns",
    "Storage",
    "TurnHandler",
    "Window",
]
