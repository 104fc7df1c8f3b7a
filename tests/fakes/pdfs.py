"""PDFs made in the test: pages of real text (a Helvetica content stream that pypdf reads back),
pages with no text layer (a scan), an encrypted file, and broken bytes."""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

CORRUPT = b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\nthis is not a pdf any more"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_pdf(pages: list[str], *, password: str | None = None) -> bytes:
    """A PDF whose page N shows the lines of ``pages[N]`` in Helvetica (encrypted with ``password``)."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(width=595, height=842)
        lines = " T* ".join(f"({_escape(line)}) Tj" for line in text.splitlines() or [""])
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 14 TL 50 800 Td {lines} ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    if password is not None:
        writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def scanned_pdf(pages: int = 2) -> bytes:
    """A PDF of blank pages: what a scan without OCR gives a text extractor."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=595, height=842)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
