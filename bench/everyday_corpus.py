"""Build bench/everyday/notes.json.xz: GNOME Help's topic pages in English, German, French and Spanish.

Real text that no one here wrote, in four languages, each page a short how-to note of the kind people
keep (100-400 words). It comes from Debian's package ``gnome-user-docs`` (43.0-2), licensed CC BY-SA 3.0
(bench/everyday/SOURCE.md). Run on a Debian machine:

    cd /tmp && apt-get download gnome-user-docs && dpkg-deb -x gnome-user-docs_*.deb gnome-user-docs
    .venv/bin/python bench/everyday_corpus.py /tmp/gnome-user-docs/usr/share/help

Guide pages (lists of links) are left out, and so are the pages' editorial comments. A paragraph of a
translation that is word for word the English one (not yet translated) is left out of the translation.
"""

from __future__ import annotations

import json
import lzma
import sys
from pathlib import Path

from lxml import etree

NS = "{http://projectmallard.org/1.0/}"
LANGUAGES = {"en": "C", "de": "de", "fr": "fr", "es": "es"}
OUT = Path(__file__).with_name("everyday") / "notes.json.xz"


def _text(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def page(path: Path) -> tuple[str, list[str]] | None:
    """A topic page's title and its paragraphs (section titles as Markdown headings); None for a guide."""
    root = etree.parse(str(path)).getroot()
    if root.get("type") == "guide":
        return None
    heading = root.find(f"{NS}title")
    blocks = []
    for element in root.iter(f"{NS}p", f"{NS}title", f"{NS}item"):
        if element is heading:
            continue
        outer = {a.tag.replace(NS, "") for a in element.iterancestors() if isinstance(a.tag, str)}
        if outer & {"info", "comment", "p"}:
            continue
        if element.tag == f"{NS}item" and element.find(f"{NS}p") is not None:
            continue
        text = _text(element)
        if text:
            blocks.append(f"## {text}" if element.tag == f"{NS}title" else text)
    return (_text(heading) if heading is not None else path.stem), blocks


def build(help_root: Path) -> list[dict[str, str]]:
    english: dict[str, list[str]] = {}
    notes = []
    for language, folder in LANGUAGES.items():
        taken: set[str] = set()
        for source in sorted((help_root / folder / "gnome-help").glob("*.page")):
            found = page(source)
            if found is None:
                continue
            title, blocks = found
            if language == "en":
                english[source.stem] = blocks
            else:
                blocks = [b for b in blocks if b not in set(english.get(source.stem, []))]
            if not blocks:
                continue
            name = title.replace("/", "-").replace(":", " -").strip(" .")
            if name.casefold() in taken:
                name = f"{name} ({source.stem})"
            taken.add(name.casefold())
            notes.append(
                {
                    "path": f"Help/{language}/{name}.md",
                    "language": language,
                    "page": source.stem,
                    "body": "\n\n".join(blocks),
                }
            )
    return notes


if __name__ == "__main__":
    built = build(Path(sys.argv[1]))
    OUT.write_bytes(lzma.compress(json.dumps(built, ensure_ascii=False, indent=0).encode(), preset=9))
    print(f"{len(built)} notes written to {OUT} ({OUT.stat().st_size // 1024} KB)")
