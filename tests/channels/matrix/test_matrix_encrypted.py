"""An end-to-end encrypted direct room: the person's message is decrypted by the bot, filed and answered,
and the answer is encrypted for the person's device; the bot's keys stay in the data folder, owner-only."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

from nio import AsyncClient, AsyncClientConfig, RoomCreateResponse, RoomMessageText, SyncResponse, UploadResponse
from nio.crypto import encrypt_attachment

from tests.channels.matrix.conftest import Person, eventually
from tests.fakes.synapse import Synapse

ENCRYPTION = {"type": "m.room.encryption", "state_key": "", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}


async def test_an_encrypted_room_is_served(serve: Any, synapse: Synapse, tmp_path: Path) -> None:
    account = await asyncio.to_thread(synapse.register)
    keys = tmp_path / "ann-keys"
    keys.mkdir()
    config = AsyncClientConfig(encryption_enabled=True)
    ann = AsyncClient(synapse.url, account.user_id, store_path=str(keys), config=config)
    ann.restore_login(account.user_id, account.device_id, account.access_token)
    try:
        await ann.keys_upload()
        served = await serve([account.user_id])
        bot = served.bot.user_id
        created = await ann.room_create(is_direct=True, invite=[bot], initial_state=[ENCRYPTION])
        assert isinstance(created, RoomCreateResponse), created
        room = created.room_id
        token: list[str | None] = [None]

        async def sync() -> SyncResponse:
            answer = await ann.sync(timeout=500, since=token[0])
            assert isinstance(answer, SyncResponse), answer
            token[0] = answer.next_batch
            if ann.should_query_keys:
                await ann.keys_query()
            return answer

        async def bot_joined() -> bool:
            await sync()
            return bot in ann.rooms[room].users if room in ann.rooms else False

        await eventually(bot_joined, "the bot joined the encrypted room")
        await eventually(lambda: _has_devices(ann, bot, sync), "the bot's device keys reached the person")
        sent = await ann.room_send(
            room, "m.room.message", {"msgtype": "m.text", "body": "buy oat milk"}, ignore_unverified_devices=True
        )
        assert getattr(sent, "event_id", None), sent

        replies: list[str] = []

        async def answered() -> list[str]:
            answer = await sync()
            joined = answer.rooms.join.get(room)
            for event in joined.timeline.events if joined else []:
                if isinstance(event, RoomMessageText) and event.sender == bot:
                    assert event.decrypted  # it came encrypted, and this device could read it
                    replies.append(event.body)
            return replies

        [reply] = await eventually(answered, "the bot answered in the encrypted room", 60)
        assert reply.startswith("Saved to Inbox/buy oat milk.md")

        # A file in an encrypted room is encrypted too: the bot decrypts it with the key its message carries.
        picture = b"a scan of the lease, page one" * 4
        ciphertext, secret = encrypt_attachment(picture)
        uploaded, _ = await ann.upload(io.BytesIO(ciphertext), "application/octet-stream", filesize=len(ciphertext))
        assert isinstance(uploaded, UploadResponse), uploaded
        file = {"url": uploaded.content_uri, "v": "v2", **{k: secret[k] for k in ("key", "iv", "hashes")}}
        sent_file = {"msgtype": "m.file", "body": "scan.bin", "file": file}
        await ann.room_send(room, "m.room.message", sent_file, ignore_unverified_devices=True)
        kept = served.app.notes.root / "Attachments" / "scan.bin"
        await eventually(lambda: _async(kept.exists()), "the file was decrypted into the vault", 60)
        assert kept.read_bytes() == picture
        folder = served.app.settings.store.path.parent / "matrix" / "keys"
        assert folder.stat().st_mode & 0o077 == 0
        assert [f for f in folder.iterdir() if f.stat().st_mode & 0o077] == []
    finally:
        await ann.close()
        if ann.store is not None:  # matrix-nio leaves its key store's database open
            ann.store.database.close()


async def _async(value: bool) -> bool:
    return value


async def _has_devices(ann: AsyncClient, user: str, sync: Any) -> bool:
    await sync()
    return bool(ann.device_store.active_user_devices(user) and list(ann.device_store.active_user_devices(user)))


async def test_a_message_the_bot_cannot_decrypt_is_said_and_never_silently_dropped(serve: Any, people: Any) -> None:
    ann: Person = await people()
    served = await serve([ann.user_id])
    room = await ann.direct_room(served.bot.user_id)
    await eventually(lambda: _joined(ann, room, served.bot.user_id), "the bot joined")
    # Encrypted with a session whose keys the bot never got (as when a client sends to verified devices only).
    content = {
        "algorithm": "m.megolm.v1.aes-sha2",
        "ciphertext": "AwgAEnB7TmV2ZXIgc2hhcmVk",
        "sender_key": "n3Ver5h4redK3yN3ver5har3dKeyN3ver5har3dK3y0",
        "session_id": "n0SuchSessi0nAnywhere0n0SuchSessi0nAnywhere",
        "device_id": ann.account.device_id,
    }
    await ann.client.room_send(room, "m.room.encrypted", content)
    [told] = await eventually(lambda: ann.messages(room, served.bot.user_id), "the bot said it could not read it")
    assert told["msgtype"] == "m.notice" and "could not decrypt" in told["body"]


async def _joined(person: Person, room: str, user: str) -> bool:
    return (await person.members(room)).get(user) == "join"
