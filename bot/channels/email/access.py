"""Who may write, and which mail is never answered.

``From:`` is easy to forge, so an allowlisted address is believed only when the receiving server vouches
for it: its ``Authentication-Results`` header (RFC 8601; the one whose authserv-id is
``trusted_authserv_id``) shows DKIM passing for a signing domain of the From domain, or SPF passing for
an envelope sender in it. A receiving server adds its header at the top of the mail (RFC 8601, section 5),
so only the topmost ``Authentication-Results`` counts, and only when it carries the trusted id: one a
sender wrote into the mail sits below it, and a topmost one of another id means the trusted server did
not add one. A mail with more than one ``From`` or ``Subject`` is refused (a signed mail replayed with a
second one on top reads as either).

The decision reads the bounded header alone (:mod:`bot.channels.email.headers`): the body of a mail
that is refused or ignored is never parsed.

Automatic mail is never answered, from anyone: the bot's own address, ``Auto-Submitted`` other than
``no`` (RFC 3834), ``Precedence: bulk/list/junk/auto_reply``, ``X-Loop``, ``X-Autoreply``,
``X-Autorespond`` and the like, ``List-Id``, and bounces (an empty Return-Path, a delivery report, the
mailer daemon). Answering them is how assistants end up writing to themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import authres

from bot.channels.access import Decision
from bot.channels.email.headers import Headers

BOUNCE_SENDERS = re.compile(r"^(mailer-daemon|postmaster|mail-daemon|no-?reply|bounces?)([+-].*)?@", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """What to do with a mail, and why (for the log)."""

    decision: Decision
    reason: str
    forged: bool = False  # refused because the receiving server does not vouch for an allowed From


@dataclass(frozen=True)
class Access:
    """The allowlist and whom to believe."""

    address: str  # the bot's own
    allowed: frozenset[str]
    trusted_authserv_id: str | None
    require_authenticated: bool = True

    def decide(self, mail: Headers) -> Verdict:
        """``serve``, ``ignore`` (automatic mail, never answered) or ``refuse`` (a stranger, a From the
        receiving server does not vouch for, or a header that does not say one thing)."""
        if mail.too_long:
            return Verdict("refuse", "its header is too long to read")
        automatic = automatic_reason(mail, self.address)
        if automatic is not None:
            return Verdict("ignore", automatic)
        if mail.from_fields != 1 or mail.sender is None:
            return Verdict("refuse", "the mail does not name exactly one sender")
        if mail.subject_fields > 1:
            return Verdict("refuse", "the mail has more than one Subject")
        if mail.sender not in self.allowed:
            return Verdict("refuse", f"{mail.sender} is not an allowed sender")
        if not self.require_authenticated:
            return Verdict("serve", "allowed sender (authentication not required)")
        assert mail.domain is not None and self.trusted_authserv_id is not None
        if authenticated(mail.domain, mail.authentication_results, self.trusted_authserv_id):
            return Verdict("serve", "allowed sender, authenticated")
        return Verdict(
            "refuse",
            f"{mail.sender} is allowed, but {self.trusted_authserv_id} does not vouch for it "
            "(no passing DKIM or SPF for its domain): the From may be forged",
            forged=True,
        )


def automatic_reason(mail: Headers, own_address: str) -> str | None:
    """Why ``mail`` is automatic (never answered), or None for a person's mail."""
    if mail.sender == own_address:
        return "it is from the bot's own address"
    auto = mail.auto_submitted.split(";", 1)[0].strip().lower()
    if auto and auto != "no":
        return f"Auto-Submitted: {auto}"
    if mail.automatic:
        return f"it is marked as automatic mail ({', '.join(mail.automatic)})"
    if mail.precedence.strip().lower() in ("bulk", "list", "junk", "auto_reply"):
        return f"Precedence: {mail.precedence.strip().lower()}"
    if mail.list_id:
        return "it came through a mailing list (List-Id)"
    if re.fullmatch(r"<\s*>", mail.return_path.strip()):
        return "it is a bounce (empty Return-Path)"
    if mail.content_type == "multipart/report":
        return "it is a delivery or read report"
    if mail.sender is not None and BOUNCE_SENDERS.match(mail.sender):
        return f"it is from {mail.sender}, an automatic sender"
    return None


def authenticated(domain: str, header: str | None, authserv_id: str) -> bool:
    """Whether ``header`` (the topmost ``Authentication-Results``) is ``authserv_id``'s and shows DKIM or
    SPF passing for ``domain`` (or a parent domain of it that signs for it)."""
    if header is None:
        return False
    try:
        parsed = authres.AuthenticationResultsHeader.parse_value(header)
    except Exception:  # a header that is not RFC 8601 vouches for nobody
        return False
    if str(parsed.authserv_id).lower() != authserv_id.lower():
        return False  # the trusted server added none on top: whatever is below is not its word
    return any(_passes(result, domain) for result in parsed.results)


def _passes(result: object, domain: str) -> bool:
    method = str(getattr(result, "method", "")).lower()
    if str(getattr(result, "result", "")).lower() != "pass":
        return False
    properties = {f"{p.type}.{p.name}".lower(): str(p.value).strip().lower() for p in getattr(result, "properties", [])}
    if method == "dkim":
        signer = properties.get("header.d") or properties.get("header.i", "").rpartition("@")[2]
        return _covers(signer, domain)
    if method == "spf":
        envelope = properties.get("smtp.mailfrom", "")
        return "@" in envelope and _covers(envelope.rpartition("@")[2], domain)
    return False


def _covers(signer: str, domain: str) -> bool:
    """Whether a pass for ``signer`` speaks for ``domain``: the same domain, or a parent of it that is
    not a top-level one (``example.com`` signs for ``mail.example.com``)."""
    signer = signer.strip(".")
    return bool(signer) and "." in signer and (domain == signer or domain.endswith("." + signer))
