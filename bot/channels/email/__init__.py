"""The e-mail channel: IMAP (aioimaplib) in, SMTP (aiosmtplib) out, over the durable bus.

``channel`` wires it together; ``imap`` is the session on the mailbox; ``headers`` reads a mail's header
within bounds, and ``access`` decides from it alone who is answered (the allowlist, the receiving server's
word on the From, automatic mail); ``bounded`` reads a served mail in a child process within limits, where
``reading``, ``body``, ``quotes`` and ``html_text`` turn it into plain data and its new text; ``receiver``
puts a mail (or an answer to a question) on the bus, ``ledger`` records each mail taken and its thread,
``compose`` and ``sender`` mail the replies, ``probe`` is the doctor's, and ``setup`` says which setting
makes a server unusable.
"""

from bot.channels.email.channel import EmailChannel
from bot.channels.email.probe import Probe, probe
from bot.channels.email.receiver import CHANNEL
from bot.channels.email.setup import EmailRefused

__all__ = ["CHANNEL", "EmailChannel", "EmailRefused", "Probe", "probe"]
