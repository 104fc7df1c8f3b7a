"""Receiving: one mail's header → access check → its body read → (files saved) → a durable inbound message.

Who before what: the access decision reads the bounded header alone, and only a served mail's body is
read (``read``, which the channel runs in a bounded process of its own; a small mail's bytes came with
its header, a larger one's body is fetched only then).

Each mail is taken once (see :mod:`bot.channels.email.ledger`): its row and what it becomes (the inbound
message on the bus, or the ``access_denied`` entry of a refused one) are one transaction, and the files
are saved before it (the vault keeps the same bytes once). The channel marks the mail ``\\Seen`` only
after :meth:`EmailReceiver.take` returns.

It never calls the model, and it answers no one: a refused or automatic mail gets no reply at all.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.bus import (
    INBOUND,
    Answer,
    Attachment,
    Audio,
    Bus,
    Document,
    InboundMessage,
    Sender,
    UntrustedPart,
)
from bot.channels.attachments import readable_document, save_attachment, saved_line
from bot.channels.conversations import conversation_id
from bot.channels.email.access import Access
from bot.channels.email.bounded import Unreadable
from bot.channels.email.headers import Headers
from bot.channels.email.ledger import Ledger
from bot.channels.email.reading import File, Forwarded, Mail
from bot.channels.notices import tell
from bot.consent import Questions
from bot.db import Database
from bot.images import is_image_path
from bot.store import Store, Strangers
from vault import Vault

log = logging.getLogger(__name__)

CHANNEL = "email"
# The reply and subject prefixes mail clients put before a subject, in a few languages.
PREFIXES = re.compile(r"^\s*((re|aw|sv|antw|vs|wg|fwd?|tr|rv|odp|res)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
# The first word of a reply to a question for consent that answers it (bot.channels.email.sender).
CHOICES = {"allow": "allow", "yes": "allow", "deny": "deny", "no": "deny"}
_FIRST_WORD = re.compile(r"\W*([^\W\d_]+)")
IMAGE_TYPES = {"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp", "image/gif": ".gif"}


@dataclass(frozen=True)
class Saved:
    """The files of a mail, kept in the vault, by what the runner does with them."""

    images: list[str]
    document: str | None
    recording: str | None
    others: list[str]  # further documents and recordings, and files of other kinds
    attachments: list[Attachment]  # every file, of any type, which undoing the run takes back

    @property
    def lines(self) -> list[str]:
        """The lines that tell the model where each file is kept."""
        lines = [saved_line("Photo", path) for path in self.images]
        if self.document is not None:
            lines.append(saved_line("Document", self.document))
        if self.recording is not None:
            lines.append(saved_line("Audio file", self.recording))
        lines += [saved_line("File", path, " (vault_read reads a document)") for path in self.others]
        return lines


class EmailReceiver:
    """Turns mail into inbound messages on the bus."""

    def __init__(self, *, access: Access, db: Database, bus: Bus, store: Store, notes: Vault, ledger: Ledger) -> None:
        self._access = access
        self._db = db
        self._bus = bus
        self._store = store
        self._notes = notes
        self._ledger = ledger
        self._strangers = Strangers(store)
        self._questions = Questions(db)
        self._question_id = re.compile(
            rf"^<vaultbot\.question\.([0-9a-f]{{1,64}})@{re.escape(access.address.rsplit('@', 1)[1])}>$"
        )

    async def take(self, headers: Headers, key: str, read: Callable[[], Awaitable[Mail]], where: str) -> str:
        """Take one mail (stored on the bus, refused, or passed over as automatic); what became of it,
        for the log line. Its body is read (``read``) only when its sender is served. A mail taken before
        (a restart before it was flagged) is left as it was."""
        if await self._ledger.taken(key):
            return "taken before"
        verdict = self._access.decide(headers)
        conversation = conversation_of(headers.sender or "unknown")
        if verdict.decision == "ignore":
            await self._ledger.record(key, "ignored", conversation)
            return f"not answered: {verdict.reason}"
        if verdict.decision == "refuse":
            await self._refuse(headers, key, conversation, forged=verdict.forged)
            return f"refused: {verdict.reason}"
        try:
            mail = await read()
        except Unreadable as exc:
            why = f"I could not read it: {exc}"
            await self._tell_sender(
                headers, key, "unreadable", why, f"could not be read ({exc}); it is left in {where}"
            )
            return f"unreadable ({exc}): the sender is told"
        answer = await self._answer(mail, conversation)
        if answer is not None:
            await self._publish(answered(mail, key, answer), key)
            return f"an answer to question {answer.question}: {answer.choice}"
        await self._publish(inbound(mail, key, await self._save(mail.files)), key)
        return "stored"

    async def _publish(self, message: InboundMessage, key: str) -> None:
        """Put a served mail's message on the bus, in one transaction with its row, which keeps its thread."""
        async with self._db.transaction():
            if await self._ledger.record(
                key,
                "published",
                message.conversation,
                inbound_id=message.id,
                message_id=message.meta.get("message_id"),
                references=message.meta.get("references", []),
                subject=message.meta.get("subject", ""),
            ):
                await self._bus.publish(INBOUND, message, conversation=message.conversation, dedupe_key=key)

    async def _answer(self, mail: Mail, conversation: str) -> Answer | None:
        """The answer ``mail`` gives to a question for consent: a reply to the question's mail whose first
        word is allow/yes or deny/no, from the person of the question's conversation; else None (a mail
        like any other)."""
        headers = mail.headers
        replied = [*headers.in_reply_to, *headers.references[-2:]]
        question_id = next((m.group(1) for m in map(self._question_id.match, replied) if m), None)
        word = _FIRST_WORD.match(mail.text)
        choice = CHOICES.get(word.group(1).casefold()) if word else None
        if question_id is None or choice is None:
            return None
        question = await self._questions.get(question_id)
        if question is None or question.conversation != conversation:
            log.warning("email: %s answered a question of another conversation; taken as a message", headers.sender)
            return None
        return Answer(question=question_id, choice=choice)  # type: ignore[arg-type]

    async def too_big(self, headers: Headers, key: str, size: int, limit: int) -> str:
        """A mail over ``limit`` bytes, read from its header alone: an allowed sender is told, once."""
        if await self._ledger.taken(key):
            return "taken before"
        if self._access.decide(headers).decision != "serve":
            return await self.take(headers, key, _never_read, "")
        why = (
            f"it is too big for me: {size / 1_048_576:.0f} MB, and I take mail up to {limit // 1_048_576} MB. "
            "Send the files in smaller mails, or a link."
        )
        await self._tell_sender(headers, key, "too_big", why, f"was too big to take ({size:,} bytes)")
        return "too big: the sender is told"

    async def _tell_sender(self, headers: Headers, key: str, outcome: str, why: str, logged: str) -> None:
        """A served sender's mail that is not taken (``outcome``): they are told ``why``, the log says it
        ``logged``, once."""
        assert headers.sender is not None
        conversation = conversation_of(headers.sender)
        async with self._db.transaction():
            if await self._ledger.record(
                key,
                outcome,
                conversation,
                inbound_id=inbound_id(key),
                message_id=headers.message_id,
                references=headers.references,
                subject=headers.subject,
            ):
                await tell(
                    self._bus,
                    channel=CHANNEL,
                    conversation=conversation,
                    recipient=headers.sender,
                    text=f"Your mail “{headers.subject or '(no subject)'}” did not reach me: {why}",
                    dedupe_key=f"{key}:{outcome}",
                    in_reply_to=inbound_id(key),
                )
                await self._store.add_interaction(
                    conversation=conversation,
                    category="error",
                    summary=f"A mail from {headers.sender} {logged}: {headers.subject}",
                    run_id=None,
                )

    async def _refuse(self, mail: Headers, key: str, conversation: str, forged: bool) -> None:
        """Log a refused mail as every channel logs strangers (:class:`bot.store.Strangers`: one entry per
        sender and hour that counts their mails, and a cap on how many senders are logged one by one), so a
        flood of forged or strangers' mail costs a bounded log. Nobody is answered by mail."""
        if mail.sender is None:
            sender, who = "(no single sender)", "an e-mail that names no single sender"
        elif forged:
            sender = f"forged:{mail.sender}"
            server = self._access.trusted_authserv_id
            who = f"an e-mail claiming to be from {mail.sender} that {server} does not vouch for"
        else:
            sender, who = mail.sender, f"the e-mail sender {mail.sender}"
        async with self._db.transaction():
            if await self._ledger.record(key, "refused", conversation):
                await self._strangers.refuse(channel=CHANNEL, sender=sender, who=who, conversation=conversation)

    async def _save(self, files: list[File]) -> Saved:
        """Keep each file under ``Attachments/`` (the same bytes saved again return the same path)."""
        images: list[str] = []
        documents: list[str] = []
        recordings: list[str] = []
        others: list[str] = []
        for file in files:
            path = await save_attachment(self._notes, _named(file), file.data)
            if is_image_path(path):
                images.append(path)
            elif readable_document(path):
                documents.append(path)
            elif file.content_type.startswith("audio/"):
                recordings.append(path)
            else:
                others.append(path)
        return Saved(
            images=images,
            document=documents[0] if documents else None,
            recording=recordings[0] if recordings else None,
            others=[*documents[1:], *recordings[1:], *others],
            attachments=[
                *(Attachment(path=path, kind="image") for path in images),
                *(Attachment(path=path, kind="document") for path in documents),
                *(Attachment(path=path, kind="audio") for path in recordings),
                *(Attachment(path=path, kind="file") for path in others),
            ],
        )


def inbound(mail: Mail, key: str, saved: Saved) -> InboundMessage:
    """The inbound message of a served mail. Its id comes from the mail's dedupe key, so the message
    built again for the same mail (after a crash) is the same message."""
    headers = mail.headers
    assert headers.sender is not None
    return InboundMessage(
        id=inbound_id(key),
        channel=CHANNEL,
        conversation=conversation_of(headers.sender),
        sender=Sender(id=headers.sender, name=headers.sender_name),
        text=compose_text(mail, saved),
        reply_to=headers.sender,
        meta={
            "message_id": headers.message_id,
            "references": headers.references,
            "subject": headers.subject,
            "files_left_out": mail.files_left_out,
        },
        # What the mail forwards is someone else's: kept apart from the person's words, and shown to the
        # model as such (bot.consent).
        untrusted=[forwarded_part(f) for f in mail.forwarded],
        audio=Audio(path=saved.recording, kind="audio") if saved.recording else None,
        document=Document(path=saved.document) if saved.document else None,
        images=saved.images,
        attachments=saved.attachments,
    )


def answered(mail: Mail, key: str, answer: Answer) -> InboundMessage:
    """The inbound message of a mail that answers a question for consent, as the other channels' answers
    are: no text, the answer."""
    headers = mail.headers
    assert headers.sender is not None
    return InboundMessage(
        id=inbound_id(key),
        channel=CHANNEL,
        conversation=conversation_of(headers.sender),
        sender=Sender(id=headers.sender, name=headers.sender_name),
        text="",
        answer=answer,
        reply_to=headers.sender,
        meta={
            "message_id": headers.message_id,
            "references": headers.references,
            "subject": headers.subject,
        },
    )


def forwarded_part(forwarded: Forwarded) -> UntrustedPart:
    """A forwarded message as untrusted content: its subject and date above its text, its sender as origin."""
    heading = [f"Subject: {forwarded.subject}"] if forwarded.subject else []
    heading += [f"Date: {forwarded.date}"] if forwarded.date else []
    return UntrustedPart(
        source="forwarded message",
        text="\n".join([*heading, *([""] if heading else []), forwarded.text]),
        origin=forwarded.sender or None,
    )


def compose_text(mail: Mail, saved: Saved) -> str:
    """The mail as the model reads it: its subject, where its files are kept, then the new text.

    A command as the first line of the body, or as the subject, is the message itself: with its
    arguments on that line (``/find oat``) the line alone, so the rest of the mail is not taken for
    them; without (``/note``), the body below is its argument."""
    body = mail.text.strip()
    subject = PREFIXES.sub("", mail.headers.subject).strip()
    first = body.partition("\n")[0]
    if first.startswith("/"):
        return "\n".join([first if " " in first.strip() else body, *saved.lines])
    if subject.startswith("/"):
        return "\n".join([subject if " " in subject or not body else f"{subject}\n{body}", *saved.lines])
    parts = [f"Subject: {subject}"] if subject else []
    parts += saved.lines
    if mail.files_left_out:
        parts.append(f"[{mail.files_left_out} more attached file(s) were not kept: at most 20 per mail.]")
    parts += [f"[vaultbot: {what}.]" for what in mail.left_out]
    if body:
        parts.append(body)
    return "\n".join(parts)


async def _never_read() -> Mail:
    raise AssertionError("a mail that is not served is never read")


def inbound_id(key: str) -> str:
    """The inbound message id of the mail with dedupe key ``key``."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def mail_key(message_id: str | None, mailbox: str, uidvalidity: int, uid: int) -> str:
    """A mail's dedupe key: its Message-ID, else (no Message-ID, or a mail that cannot be read) where
    it is (mailbox, UIDVALIDITY, UID)."""
    if message_id is not None:
        return f"email:{message_id}"
    return f"email:{mailbox}:{uidvalidity}:{uid}"


def conversation_of(address: str) -> str:
    """One conversation per sender address."""
    return conversation_id(CHANNEL, address)


def _named(file: File) -> str:
    """The file's name, with the extension of its type when an image's name has none."""
    name = file.name
    extension = IMAGE_TYPES.get(file.content_type) or (
        mimetypes.guess_extension(file.content_type) if "." not in name else None
    )
    if extension and not name.lower().endswith(extension) and "." not in name.rsplit("/", 1)[-1]:
        return f"{name}{extension}"
    return name
