"""PDFs made in the test: pages of real text (a Helvetica content stream that pypdf reads back),
pages with no text layer (a scan), an encrypted file, broken bytes, pages that cost seconds each and a
page that costs a hundred megabytes."""

from __future__ import annotations

import io
import zlib

from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject, StreamObject

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


def slow_pdf(pages: list[str], slow: int, *, operators: int = 200_000) -> bytes:
    """A PDF whose page N shows ``pages[N]``, followed by ``slow`` pages that each cost pypdf seconds
    of CPU to read (about 2 s here for 200,000 ``operators``) and show one word. The slow pages share
    one compressed content stream, so 60 of them are 13 KB: what a hostile sender can mail in."""
    writer = PdfWriter()
    reader_of_text = PdfReader(io.BytesIO(text_pdf(pages))) if pages else None
    if reader_of_text is not None:
        for page in reader_of_text.pages:
            writer.add_page(page)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 12 Tf 50 800 Td (slow) Tj " + b"0 0 Td " * operators + b"ET")
    content = writer._add_object(stream.flate_encode(level=9))
    for _ in range(slow):
        page = writer.add_blank_page(width=595, height=842)
        page[NameObject("/Contents")] = content
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def inflating_pdf(size: int = 70_000_000) -> bytes:
    """Three pages; the middle one's content stream is ~100 KB compressed and ``size`` bytes inflated (just
    under pypdf's own 75 MB cap): reading that page needs more than a hundred megabytes of memory."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf(["Page one is fine.", "", "Page three is fine."]))))
    squeeze = zlib.compressobj(9)
    operators = b"0 0 Td " * 150_000
    bomb = b"".join(squeeze.compress(operators) for _ in range(size // len(operators))) + squeeze.flush()
    stream = StreamObject()
    stream.set_data(bomb)
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    writer.pages[1][NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
