"""The Matrix channel: matrix-nio against the person's homeserver, over the durable bus.

``channel`` wires it together and drives the sync loop; ``session`` keeps the bot's login and the
sync token in the data folder (owner-only); ``receiver`` turns what a sync delivers into inbound
messages (an invite from anyone but an allowlisted person is rejected and logged); ``sender`` sends
the outbox as Markdown rendered to HTML, and ``probe`` is the doctor's.
"""

from bot.channels.matrix.channel import MatrixChannel
from bot.channels.matrix.probe import Probe, probe
from bot.channels.matrix.receiver import CHANNEL
from bot.channels.matrix.session import MatrixRefused

__all__ = ["CHANNEL", "MatrixChannel", "MatrixRefused", "Probe", "probe"]
