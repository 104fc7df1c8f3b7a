"""The stateless runner: the model ↔ tools loop, its guards, and the inbound handler."""

from bot.runner.anthropic_model import AnthropicModel
from bot.runner.capture import CaptureModel
from bot.runner.commands import CommandRunner, ReviewLink, parse_command
from bot.runner.errors import ModelError, ModelRejected, ModelUnavailable
from bot.runner.handler import DeadLetter, TurnHandler
from bot.runner.loop import Limits, RunResult, StepRecorder, run_turn
from bot.runner.model import ModelClient, ModelReply, TextListener, Usage
from bot.runner.prompt import load_system_prompt

__all__ = [
    "CommandRunner",
    "parse_command",
    "AnthropicModel",
    "CaptureModel",
    "DeadLetter",
    "Limits",
    "ModelClient",
    "ModelError",
    "ModelRejected",
    "ModelReply",
    "ModelUnavailable",
    "ReviewLink",
    "RunResult",
    "StepRecorder",
    "TextListener",
    "TurnHandler",
    "Usage",
    "load_system_prompt",
    "run_turn",
]
