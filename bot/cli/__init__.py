"""The ``vaultbot`` command: ``commands`` wires the subcommands (a thin face that loads settings, opens the
app and prints); ``chat``, ``serve``, ``retry`` and ``doctor`` are the bodies of the longer ones;
``tables`` formats what the terminal shows; ``logs`` decides where log lines go."""

from bot.cli.commands import cli, main

__all__ = ["cli", "main"]
