"""``/undo`` by mail takes back every file a mail brought, not only the first: a real Dovecot and aiosmtpd,
the real channel and runner, capture mode."""

from __future__ import annotations

import asyncio

from tests.channels.email.harness import Serve
from tests.channels.email.mails import mail
from tests.fakes.dovecot import Dovecot
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
