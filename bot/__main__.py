"""``python -m bot`` is ``vaultbot``."""

from bot.cli import main

main()
