"""The stateless runner: the model ↔ tools loop, its guards, and the inbound handler."""

from typing import TYPE_CHECKING

from bot.runner.capture import CaptureModel
from bot.runner.commands import CommandRunner, ReviewLink, parse_command
from bot.runner.errors import DeadLetter, ModelError, ModelRejected, ModelUnavailable
from bot.runner.handler import Assistant, Audit, Inputs, StandIns, Storage, TurnHandler, Window
from bot.runner.loop import Limits, RunResult, StepRecorder, run_turn
from bot.runner.model import ModelClient, ModelReply, TextListener, Usage
from bot.runner.prompt import load_system_prompt

if TYPE_CHECKING:
    from bot.runner.anthropic_model import AnthropicModel

__all__ = [
    "Assistant",
    "Audit",
    "CommandRunner",
    "parse_command",
    "AnthropicModel",
    "CaptureModel",
    "DeadLetter",
    "Inputs",
    "Limits",
    "ModelClient",
    "ModelError",
    "ModelRejected",
    "ModelReply",
    "ModelUnavailable",
    "ReviewLink",
    "RunResult",
    "StandIns",
    "Storage",
    "StepRecorder",
    "TextListener",
    "TurnHandler",
    "Usage",
    "Window",
    "load_system_prompt",
    "run_turn",
]


def __getattr__(name: str) -> object:
    """``AnthropicModel`` on first use: the Anthropic SDK imports thousands of modules (about a second),
    which capture mode and the commands that only read the store never need."""
    if name == "AnthropicModel":
        from bot.runner.anthropic_model import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
