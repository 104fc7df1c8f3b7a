"""Who a channel serves: each message it receives is decided one of three ways, deny by default.

``serve``: an allowlisted person's, it goes on the bus. ``refuse``: a stranger's (or one that cannot be
believed), never given to the model and logged ``access_denied`` through :class:`bot.store.Strangers`,
which every channel shares so a flood of strangers costs a bounded log. ``ignore``: not for the bot (a
group message not addressed to it, automatic mail), passed over without a word. What makes a person
allowlisted is the channel's own (a Telegram user id, an e-mail address its server vouches for).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Decision"]

Decision = Literal["serve", "refuse", "ignore"]
