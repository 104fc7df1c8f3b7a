"""Messages an older version left on the bus (a durable bus outlives an upgrade) kept the tap, the
scheduled task and the saved files in ``meta``; they are handled as they were when they were stored."""

from __future__ import annotations

from typing import Any

from pydantic import RootModel

from bot.app import App
from bot.bus import INBOUND, Attachment, InboundMessage, Scheduled
from tests.fakes.scripted_model import ScriptedModel, say
from tests.helpers import outbox, run_inbox
from tests.runner.conftest import AppFactory, said, send

Stored = RootModel[dict[str, Any]]  # a payload as the old version wrote it


def old(text: str, **meta: Any) -> Stored:
    return Stored(
        {
            "id": f"old-{len(text)}-{len(meta)}",
            "channel": "terminal",
            "conversation": "terminal:ann",
            "sender": {"id": "ann", "name": "ann"},
            "text": text,
            "received_at": "2026-11-30T09:00:00Z",
            "meta": {"reply_to": "ann", **meta},
        }
    )


async def test_an_old_scheduled_task_is_no_command_and_holds_the_words_it_was_made_with(make_app: AppFactory) -> None:
    model = ScriptedModel(lambda messages: say("Done."))
    app: App = await make_app(model)
    await send(app, "Remember: the gate code is 4412.")
    await run_inbox(app)
    stored = old("/new", reminder="r1", sources=["forwarded message"])
    await app.bus.publish(INBOUND, stored, conversation="terminal:ann")
    await run_inbox(app)

    assert "the gate code is 4412" in said(model.calls[1][0])  # no /new ran: the history is still there
    assert "scheduled task holding words from forwarded message" in said(model.calls[1][-1])
    runs = await app.store.list_runs(limit=5)
    assert [run["mode"] for run in runs] == ["assistant", "assistant"]


async def test_undo_of_an_old_message_takes_back_the_file_it_brought(make_app: AppFactory) -> None:
    app: App = await make_app(ScriptedModel(lambda messages: say("Kept.")))
    path = app.notes.save_attachment("Attachments", "plans.zip", b"PK\x03\x04 the plans")
    await app.bus.publish(INBOUND, old("the kitchen plans", attachment=path), conversation="terminal:ann")
    await run_inbox(app)
    await send(app, "/undo")
    await run_inbox(app)

    assert f"• {path}: moved to .trash/{path}" in (await outbox(app))[-1].text
    assert not (app.notes.root / path).exists()


def test_an_old_payload_reads_into_the_typed_fields() -> None:
    payload = old("", tap="q-77", reminder="r1", sources=["web page"], attachments=["A/x.jpg", "A/y.bin"])
    message = InboundMessage.model_validate_json(payload.model_dump_json())
    assert message.tap == "q-77" and message.reminder == Scheduled(id="r1", sources=["web page"])
    assert message.attachments == [Attachment(path="A/x.jpg", kind="file"), Attachment(path="A/y.bin", kind="file")]
    assert message.reply_to == "ann" and message.meta == {}
