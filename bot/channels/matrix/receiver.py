"""Receiving: what one sync delivers → access check → durable inbound messages.

An invite is joined when an allowlisted person sent it, and rejected (left) and logged
``access_denied`` otherwise. A message in a joined room is put on the bus (dedupe key: its event id)
when an allowlisted person wrote it; anyone else's is logged as refused and never reaches the model.
A reaction (✅ or ❌) to a question for consent, or a reply to it whose first word is allow or deny,
is the person's answer. The person's edit of a text message (``m.replace``) is a correction of it
(:mod:`bot.channels.corrections`). It never calls the model.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from nio import AsyncClient, JoinResponse, MessageDirection, RoomGetEventResponse, RoomMessagesResponse, SyncResponse

from bot.bus import INBOUND, Answer, Bus, InboundMessage, Sender, UntrustedPart
from bot.channels.conversations import conversation_id
from bot.channels.corrections import CORRECTION
from bot.channels.matrix.files import NotFetched, Saved, fetch, is_file
from bot.channels.notices import tell
from bot.store import Store, Strangers
from vault import Vault

log = logging.getLogger(__name__)

CHANNEL = "matrix"
# A reaction that answers a question for consent, and the first word of a reply that does.
REACTIONS = {"✅": "allow", "✔️": "allow", "👍": "allow", "❌": "deny", "✖️": "deny", "👎": "deny"}
WORDS = {"allow": "allow", "yes": "allow", "deny": "deny", "no": "deny"}
UNDECRYPTABLE = (
    "I could not decrypt a message of yours: its keys did not reach my device. Please send it again "
    "(and, if this keeps happening, make sure your client sends keys to unverified devices)."
)
_FIRST_WORD = re.compile(r"\W*([^\W\d_]+)")


def question_key(event_id: str) -> str:
    """The store's key of the question for consent that the bot's event ``event_id`` asks."""
    return f"matrix-question:{event_id}"


@dataclass
class Access:
    """The allowlist: deny by default."""

    allowed_users: frozenset[str]

    def serves(self, user_id: str) -> bool:
        """Whether ``user_id`` is served."""
        return user_id in self.allowed_users


class MatrixReceiver:
    """Puts what a sync delivered on the bus."""

    def __init__(self, client: AsyncClient, *, access: Access, bus: Bus, store: Store, notes: Vault) -> None:
        self._client = client
        self._notes = notes
        self._access = access
        self._bus = bus
        self._store = store
        self._strangers = Strangers(store)

    async def receive(self, sync: SyncResponse, since: str | None) -> list[str]:
        """Handle every invite and timeline event of ``sync`` (asked ``since`` that token); the rooms where
        a message was stored. A room whose timeline the homeserver cut short (``limited``: more came since
        than a sync carries) has the events in between fetched first, so none is passed over."""
        for room_id, invite in sync.rooms.invite.items():
            await self._invited(room_id, invite.invite_state)
        stored = []
        for room_id, room in sync.rooms.join.items():
            events = [getattr(event, "source", None) for event in room.timeline.events]
            if room.timeline.limited and since is not None and room.timeline.prev_batch:
                events = [*await self._gap(room_id, room.timeline.prev_batch, since), *events]
            for source in events:
                if isinstance(source, dict) and await self._event(room_id, source):
                    stored.append(room_id)
        return list(dict.fromkeys(stored))

    async def _gap(self, room_id: str, before: str, since: str) -> list[dict[str, Any]]:
        """The events of ``room_id`` between the sync token ``since`` and ``before``, oldest first (a
        failure raises :class:`OSError`: the sync is not kept, and is asked again)."""
        found: list[dict[str, Any]] = []
        start = before
        while True:
            page = await self._client.room_messages(
                room_id, start=start, end=since, direction=MessageDirection.back, limit=100
            )
            if not isinstance(page, RoomMessagesResponse):
                raise OSError(f"the homeserver would not give the events of {room_id} missed since the last sync")
            found += [e.source for e in page.chunk if isinstance(getattr(e, "source", None), dict)]
            if not page.chunk or not page.end or page.end == start:
                break
            start = page.end
        log.info("matrix: fetched %d events of %s that the sync left out", len(found), room_id)
        return found[::-1]

    async def _invited(self, room_id: str, state: list[Any]) -> None:
        me = self._client.user_id
        inviter = next(
            (
                e.sender
                for e in state
                if getattr(e, "state_key", None) == me and getattr(e, "membership", None) == "invite"
            ),
            None,
        )
        if inviter is not None and self._access.serves(inviter):
            answer = await self._client.join(room_id)
            if isinstance(answer, JoinResponse):
                log.info("matrix: joined %s at the invite of %s", room_id, inviter)
            else:
                log.warning("matrix: could not join %s (%s); the invite stays", room_id, answer)
            return
        await self._client.room_leave(room_id)  # an invite left is an invite rejected
        log.warning("matrix: rejected an invite to %s from %s", room_id, inviter)
        await self._strangers.refuse(
            channel=CHANNEL,
            sender=inviter or "(unknown)",
            who=f"Matrix user {inviter or '(unknown)'} (an invite to {room_id})",
            conversation=conversation_of(room_id),
        )

    async def _event(self, room_id: str, event: dict[str, Any]) -> bool:
        """Store one timeline event if it is for the model; True when it was stored."""
        sender, kind = event.get("sender"), event.get("type")
        event_id = event.get("event_id")
        if not isinstance(sender, str) or not isinstance(event_id, str) or sender == self._client.user_id:
            return False
        if kind not in ("m.room.message", "m.reaction", "m.room.encrypted"):
            return False
        content = event.get("content") or {}
        if not self._access.serves(sender):
            log.warning("matrix: refused a message of %s in %s", sender, room_id)
            await self._strangers.refuse(
                channel=CHANNEL, sender=sender, who=f"Matrix user {sender}", conversation=conversation_of(room_id)
            )
            return False
        if kind == "m.room.encrypted":  # still encrypted: its keys never reached this device
            log.warning("matrix: could not decrypt event %s of %s in %s", event_id, sender, room_id)
            await self._tell(room_id, event_id, UNDECRYPTABLE)
            return False
        if content.get("msgtype") == "m.notice":  # a bot's message, by Matrix's convention: never answered
            return False
        edited = (content.get("m.relates_to") or {}).get("rel_type") == "m.replace"
        if edited:
            # Its new text, not the "* …" body clients send for those that show no edits. A file's edit (its
            # caption) is passed over: the file is filed already, and its new caption alone says nothing.
            content = content.get("m.new_content")
            if not isinstance(content, dict) or content.get("msgtype") not in ("m.text", "m.emote"):
                return False
        answer = await self._answer(room_id, kind, content)
        if kind == "m.reaction" and answer is None:
            return False
        saved: Saved | None = None
        if answer is None and is_file(content):
            try:
                saved = await fetch(self._client, self._notes, content, event_id)
            except NotFetched as exc:
                await self._tell(room_id, event_id, str(exc))
                return False
        text = "" if answer is not None else (_text(content) if saved is None else _with_file(saved))
        if answer is None and not text:
            return False
        untrusted: list[UntrustedPart] = []
        if answer is None:
            text, untrusted = await self._with_quote(room_id, sender, content, text)
        if edited:
            text = f"{CORRECTION}\n{text}"
        message = InboundMessage(
            channel=CHANNEL,
            conversation=conversation_of(room_id),
            sender=Sender(id=sender),
            text=text,
            answer=answer,
            untrusted=untrusted,
            meta={"event_id": event_id, "msgtype": content.get("msgtype"), "edited": edited},
            reply_to=room_id,
            attachments=[saved.attachment] if saved else [],
            audio=saved.audio if saved else None,
            document=saved.document if saved else None,
            images=saved.images if saved else [],
        )
        await self._bus.publish(INBOUND, message, conversation=message.conversation, dedupe_key=f"mx:{event_id}")
        return answer is None

    async def _tell(self, room_id: str, event_id: str, text: str) -> None:
        """Answer from the channel itself (a file it could not take, a message it could not decrypt),
        through the outbox, once per event."""
        await tell(
            self._bus,
            channel=CHANNEL,
            conversation=conversation_of(room_id),
            recipient=room_id,
            text=text,
            dedupe_key=f"mx:{event_id}:told",
        )

    async def _with_quote(
        self, room_id: str, sender: str, content: dict[str, Any], text: str
    ) -> tuple[str, list[UntrustedPart]]:
        """The text of a reply with the message it replies to: the person's own words as context, anyone
        else's (the bot's own included, which may repeat anyone's) kept apart as someone else's."""
        replied = ((content.get("m.relates_to") or {}).get("m.in_reply_to") or {}).get("event_id")
        if not isinstance(replied, str):
            return text, []
        found = await self._client.room_get_event(room_id, replied)
        if not isinstance(found, RoomGetEventResponse):
            return text, []
        quoted = _cut(_text(found.event.source.get("content") or {}))
        author = found.event.sender
        if not quoted:
            return text, []
        if author == sender:
            return f"[Replying to: “{quoted}”]\n{text}", []
        origin = "this assistant, an earlier message of its own" if author == self._client.user_id else author
        return text, [UntrustedPart(source="quoted message", text=quoted, origin=origin)]

    async def _answer(self, room_id: str, kind: str, content: dict[str, Any]) -> Answer | None:
        """The answer to a question for consent that ``content`` gives, or None."""
        relation = content.get("m.relates_to") or {}
        if kind == "m.reaction":
            target, choice = relation.get("event_id"), REACTIONS.get(str(relation.get("key", "")).strip())
        else:
            target = (relation.get("m.in_reply_to") or {}).get("event_id")
            word = _FIRST_WORD.match(_text(content))
            choice = WORDS.get(word.group(1).casefold()) if word else None
        if not isinstance(target, str) or choice is None:
            return None
        asked = await self._store.sent(question_key(target))
        if asked is None or asked[0] != room_id:
            return None
        return Answer(question=asked[1], choice=choice)  # type: ignore[arg-type]


def _text(content: dict[str, Any]) -> str:
    """The words of a message, without the quote of the message it replies to (clients put it first)."""
    body = content.get("body")
    if not isinstance(body, str) or content.get("msgtype") not in ("m.text", "m.notice", "m.emote"):
        return ""
    if (content.get("m.relates_to") or {}).get("m.in_reply_to"):
        lines = body.split("\n")
        while lines and lines[0].startswith(">"):
            lines.pop(0)
        body = "\n".join(lines).strip()
    return body.strip()


def _with_file(saved: Saved) -> str:
    """A file's message as the model reads it: where the file is kept, then the caption, if any."""
    return "\n".join([saved.line, *([saved.caption] if saved.caption else [])])


def _cut(quoted: str) -> str:
    return quoted if len(quoted) <= 500 else quoted[:500] + "…"


def conversation_of(room_id: str) -> str:
    """The bus conversation of a Matrix room."""
    return conversation_id(CHANNEL, room_id)
