"""Undoing the run of a mail takes back every file the mail brought, not only the first, by ``/undo`` in
a mail and by the undoer itself: a real Dovecot and aiosmtpd, the real channel and runner."""

from __future__ import annotations

import asyncio

from bot.undo import Undoer
from tests.channels.email.harness import Serve
from tests.channels.email.mails import mail
from tests.fakes.dovecot import Dovecot
from tests.fakes.pdfs import text_pdf
from tests.fakes.scripted_model import ScriptedModel, say
from tests.fakes.smtp_server import RecordingSmtp


async def test_undo_of_a_mail_with_two_files_moves_both_to_the_trash(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    served = await serve()  # capture mode: the files are kept and a note links them
    plans, drawing = b"PK\x03\x04 the plans", b"AC1032 the drawing"
    files = [("plans.zip", "application/zip", plans), ("floor.dwg", "application/octet-stream", drawing)]
    await asyncio.to_thread(dovecot.deliver, mail("The kitchen plans", files=files))
    await asyncio.to_thread(smtp.wait_count, 1)
    root = served.app.notes.root
    assert (root / "Attachments/plans.zip").read_bytes() == plans
    assert (root / "Attachments/floor.dwg").read_bytes() == drawing

    await asyncio.to_thread(dovecot.deliver, mail("/undo", subject="undo"))
    told = (await asyncio.to_thread(smtp.wait_count, 2))[-1].text

    assert "• Attachments/plans.zip: moved to .trash/Attachments/plans.zip" in told
    assert "• Attachments/floor.dwg: moved to .trash/Attachments/floor.dwg" in told
    assert not (root / "Attachments/plans.zip").exists() and not (root / "Attachments/floor.dwg").exists()
    assert (root / ".trash/Attachments/floor.dwg").read_bytes() == drawing


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
