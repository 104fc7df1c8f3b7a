"""Undoing the run of a mail takes back every file the mail brought, not only its first: a mail's
attachments are all under `Attachments/`, and all go to the trash with the run."""

from __future__ import annotations

import asyncio

from bot.undo import Undoer
from tests.channels.email.harness import Serve
from tests.channels.email.mails import mail
from tests.fakes.dovecot import Dovecot
from tests.fakes.pdfs import text_pdf
from tests.fakes.scripted_model import ScriptedModel, say
from tests.fakes.smtp_server import RecordingSmtp


async def test_undoing_a_mail_with_three_attachments_takes_back_all_three(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    served = await serve(ScriptedModel(lambda messages: say("Kept the three files.")))
    files = [
        ("invoice.pdf", "application/pdf", text_pdf(["Invoice 2026-117"])),
        ("receipt.pdf", "application/pdf", text_pdf(["Receipt for the shelf"])),
        ("photos.zip", "application/zip", b"PK\x05\x06" + b"\x00" * 18),
    ]
    await asyncio.to_thread(dovecot.deliver, mail("The paperwork for the shelf.", files=files))
    await asyncio.to_thread(smtp.wait_count, 1)
    attachments = served.app.notes.root / "Attachments"
    assert sorted(path.name for path in attachments.iterdir()) == ["invoice.pdf", "photos.zip", "receipt.pdf"]

    [run] = await served.app.db.fetchall("SELECT id FROM runs WHERE inbound_id IS NOT NULL")
    report = await Undoer(served.app.notes, served.app.store).undo(run["id"])

    assert report.complete
    assert sorted(item.change.path for item in report.items if item.change.kind == "attachment") == [
        "Attachments/invoice.pdf",
        "Attachments/photos.zip",
        "Attachments/receipt.pdf",
    ]
    assert list(attachments.iterdir()) == []
