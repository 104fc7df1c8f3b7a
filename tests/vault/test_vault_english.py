"""Search by meaning with both models vaultbot ships: English notes by all-MiniLM-L6-v2, the rest by the
multilingual USE. Real models, real vault folders, real SQLite files."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.vault.embedders import WAIT, Counting, Gated
from vault import EnglishEmbedder, MultilingualEmbedder, Vault

# Everyday help notes in English (written here, after GNOME Help's topics) and notes in German and French.
NOTES = {
    ("Help", "Clearing a paper jam"): "Open the front cover of the printer and gently pull the sheet out with both "
    "hands, in the direction it normally travels. Check that no torn pieces are left inside before closing the cover.",
    ("Help", "Take a screenshot"): "Press the Print key to capture the whole screen, or hold Shift to select an "
    "area. The image is saved in the Pictures folder.",
    ("Help", "Safely remove a USB drive"): "Before unplugging a memory stick, eject it from the file manager and "
    "wait until it says it can be removed, so no data is lost.",
    ("Help", "Use a left-handed mouse"): "In the mouse settings, swap the primary and secondary buttons so the right "
    "button does what the left one did.",
    ("Help", "My computer gets really hot"): "Laptops warm up when they work hard. Keep the vents clear, use it on a "
    "desk rather than a cushion or your lap, and check that the fan is not clogged with dust.",
    ("Kochen", "Pfannkuchen"): "Mehl, Milch, zwei Eier und eine Prise Salz verrühren, eine halbe Stunde ruhen "
    "lassen und in heißer Butter goldbraun backen.",
    ("Reisen", "Zugfahrt nach Wien"): "Der Nachtzug fährt um 21 Uhr ab, Liegewagen gebucht, die Fahrkarte liegt in "
    "der Schublade im Flur.",
    ("Maison", "Chaudière"): "L'entretien annuel de la chaudière est prévu en octobre, le technicien vient le "
    "mardi matin.",
}
ENGLISH = [path for (folder, title) in NOTES if (path := f"{folder}/{title}.md").startswith("Help/")]
# Questions that share no word with their note. The multilingual model alone misses the first three (measured:
# the note is not among the first five); the English model finds each first.
ENGLISH_QUESTIONS = {
    "a page got stuck in the machine, how do I free it": "Help/Clearing a paper jam.md",
    "grab a snap of my monitor": "Help/Take a screenshot.md",
    "I'm a southpaw, flip what each finger does": "Help/Use a left-handed mouse.md",
    "pull out a thumb stick without corrupting stuff": "Help/Safely remove a USB drive.md",
}
# German and French questions of English notes, sharing no word with them: found by the multilingual model's
# second vectors of the English notes (without them, by neither model: measured, the note is not first).
ACROSS_QUESTIONS = {
    "Wie bekomme ich ein eingeklemmtes Blatt aus dem Drucker?": "Help/Clearing a paper jam.md",
    "mon ordinateur portable chauffe beaucoup": "Help/My computer gets really hot.md",
}
OTHER_QUESTIONS = {
    "wie mache ich dünne Eierkuchen": "Kochen/Pfannkuchen.md",
    "wann fährt mein Schlafwagen": "Reisen/Zugfahrt nach Wien.md",
    "quand vient le réparateur du chauffage": "Maison/Chaudière.md",
}


def write_notes(vault: Vault) -> None:
    for (folder, title), content in NOTES.items():
        vault.write(folder, title, content)


def first(vault: Vault, question: str) -> str | None:
    hits = vault.search(question, limit=5)
    return hits[0].path if hits else None


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    vault = Vault(
        tmp_path_factory.mktemp("both") / "vault",
        embedder=Counting(MultilingualEmbedder()),
        english=Counting(EnglishEmbedder()),
    )
    write_notes(vault)
    assert vault.wait_for_meaning(WAIT)
    yield vault
    vault.close()


def test_each_note_is_embedded_by_the_model_of_its_language(both: Vault) -> None:
    multilingual, english = both._recall._spaces[0].embedder, both._recall._spaces[1].embedder
    assert both._recall.embedded() == [3, 5]
    assert sorted(text.split("\n")[0] for text in english.texts) == sorted(p[5:-3] for p in ENGLISH)
    # The English notes too, once each: their second vectors, for questions in other languages.
    assert sorted(text.split("\n")[0] for text in multilingual.texts if "\n" in text) == sorted(
        ["Chaudière", "Pfannkuchen", "Zugfahrt nach Wien", *(p[5:-3] for p in ENGLISH)]
    )


def test_english_notes_get_their_second_vectors_after_every_note_has_its_first(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    for (folder, title), content in NOTES.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / f"{title}.md").write_text(content + "\n", encoding="utf-8")
    multilingual, english = Counting(MultilingualEmbedder()), Counting(EnglishEmbedder())
    with Vault(root, embedder=multilingual, english=english) as vault:
        assert vault.wait_for_meaning(WAIT)
        titles = [text.split("\n")[0] for text in multilingual.texts if "\n" in text]
        assert sorted(titles[:3]) == ["Chaudière", "Pfannkuchen", "Zugfahrt nach Wien"]
        assert sorted(titles[3:]) == sorted(p[5:-3] for p in ENGLISH)
        assert sorted(text.split("\n")[0] for text in english.texts) == sorted(p[5:-3] for p in ENGLISH)
        for question, note in ACROSS_QUESTIONS.items():
            assert first(vault, question) == note, question
    # Opened again: nothing to embed by either model.
    multilingual, english = Counting(MultilingualEmbedder()), Counting(EnglishEmbedder())
    with Vault(root, embedder=multilingual, english=english) as again:
        assert again.wait_for_meaning(WAIT)
        assert [t for t in multilingual.texts if "\n" in t] == [] and english.texts == []
        for question, note in ACROSS_QUESTIONS.items():
            assert first(again, question) == note, question


def test_a_note_too_short_to_tell_by_its_common_words_is_told_by_its_words_and_title(tmp_path: Path) -> None:
    multilingual, english = Counting(MultilingualEmbedder()), Counting(EnglishEmbedder())
    with Vault(tmp_path / "vault", embedder=multilingual, english=english) as vault:
        vault.write("Lists", "Packing for the beach", "- sunscreen\n- towels\n- snorkel\n- charger")
        vault.write("Listen", "Einkaufszettel", "- Milch\n- Eier\n- Brötchen\n- Zahnpasta")
        assert vault.wait_for_meaning(WAIT)
        assert [text.split("\n")[0] for text in english.texts] == ["Packing for the beach"]
        # One note each; the multilingual model also made the English note's second vector.
        assert vault._recall.embedded() == [1, 1]
        assert sorted(text.split("\n")[0] for text in multilingual.texts) == ["Einkaufszettel", "Packing for the beach"]
        assert first(vault, "what to bring to the seaside") == "Lists/Packing for the beach.md"


@pytest.mark.parametrize("question", ENGLISH_QUESTIONS)
def test_an_english_question_finds_its_note_by_meaning(both: Vault, question: str) -> None:
    assert first(both, question) == ENGLISH_QUESTIONS[question]


@pytest.mark.parametrize("question", OTHER_QUESTIONS)
def test_a_german_or_french_question_still_finds_its_note(both: Vault, question: str) -> None:
    assert first(both, question) == OTHER_QUESTIONS[question]


def test_the_multilingual_model_alone_misses_what_the_english_one_finds(tmp_path: Path) -> None:
    """What the English model adds (the test above fails without it)."""
    with Vault(tmp_path / "vault", embedder=MultilingualEmbedder()) as vault:
        write_notes(vault)
        assert vault.wait_for_meaning(WAIT)
        missed = [q for q, note in ENGLISH_QUESTIONS.items() if note not in [h.path for h in vault.search(q, limit=5)]]
        assert len(missed) >= 2, missed


def test_words_still_find_their_note_first(both: Vault) -> None:
    assert first(both, "Liegewagen") == "Reisen/Zugfahrt nach Wien.md"
    assert first(both, "Pictures folder") == "Help/Take a screenshot.md"


def test_related_of_an_english_note_names_english_notes(both: Vault) -> None:
    written = both.write(
        "Inbox", "Printer trouble", "The printer chewed a sheet again; opened the cover to get it out."
    )
    try:
        related = both.related(written.path)
        assert related and related[0].path == "Help/Clearing a paper jam.md"
        assert all(r.path in ENGLISH for r in related)
    finally:
        (both.root / written.path).unlink()
        both.sync()


def test_a_vault_indexed_before_the_english_model_gets_a_second_pass_without_re_embedding_the_first(
    tmp_path: Path,
) -> None:
    root = tmp_path / "vault"
    with Vault(root, embedder=MultilingualEmbedder()) as before:
        write_notes(before)
        assert before.wait_for_meaning(WAIT)
        assert before._recall.embedded() == [len(NOTES)]
    multilingual, english = Counting(MultilingualEmbedder()), Counting(EnglishEmbedder())
    with Vault(root, embedder=multilingual, english=english) as upgraded:
        assert upgraded.wait_for_meaning(WAIT)
        # The English notes are embedded again by the English model; by the multilingual one, once more each
        # for their second vectors (the ones it held went with the English model), and nothing else.
        assert sorted(t.split("\n")[0] for t in multilingual.texts if "\n" in t) == sorted(p[5:-3] for p in ENGLISH)
        assert sorted(text.split("\n")[0] for text in english.texts) == sorted(p[5:-3] for p in ENGLISH)
        assert upgraded._recall.embedded() == [3, 5]
        for question, note in {**ENGLISH_QUESTIONS, **OTHER_QUESTIONS}.items():
            assert first(upgraded, question) == note, question
    # Opened again: nothing to embed by either model.
    multilingual, english = Counting(MultilingualEmbedder()), Counting(EnglishEmbedder())
    with Vault(root, embedder=multilingual, english=english) as again:
        assert again.wait_for_meaning(WAIT)
        assert [t for t in multilingual.texts if "\n" in t] == [] and english.texts == []
        assert again._recall.embedded() == [3, 5]
    # The first model's file kept its vectors for the notes that stay with it.
    with closing(sqlite3.connect(root / ".vaultbot" / "vectors.db")) as db:  # a connection's own `with` leaves it open
        kept = {path for (path,) in db.execute("SELECT DISTINCT path FROM chunks WHERE seq >= 0")}
    assert kept == {"Kochen/Pfannkuchen.md", "Reisen/Zugfahrt nach Wien.md", "Maison/Chaudière.md"}


def test_an_upgraded_vault_answers_by_meaning_with_its_old_vectors_during_the_second_pass(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with Vault(root, embedder=MultilingualEmbedder()) as before:
        write_notes(before)
        assert before.wait_for_meaning(WAIT)
    gated = Gated(EnglishEmbedder())
    with Vault(root, embedder=MultilingualEmbedder(), english=gated) as upgraded:
        try:
            assert upgraded.wait_for_meaning(WAIT, all_notes=False)
            assert not upgraded.wait_for_meaning(0.1)
            # The English notes still have their multilingual vectors, and they answer.
            assert first(upgraded, "my notebook is burning my legs") == "Help/My computer gets really hot.md"
            assert first(upgraded, "wann fährt mein Schlafwagen") == "Reisen/Zugfahrt nach Wien.md"
        finally:
            gated.gate.set()
        assert upgraded.wait_for_meaning(WAIT)
        assert first(upgraded, "grab a snap of my monitor") == "Help/Take a screenshot.md"


def test_a_note_that_changes_language_moves_to_the_other_model(tmp_path: Path) -> None:
    with Vault(tmp_path / "vault", max_staleness=0, embedder=MultilingualEmbedder(), english=EnglishEmbedder()) as v:
        write_notes(v)
        assert v.wait_for_meaning(WAIT)
        (v.root / "Help" / "Take a screenshot.md").write_text(
            "Mit der Taste Druck wird der ganze Bildschirm aufgenommen; das Bild landet im Ordner Bilder.\n",
            encoding="utf-8",
        )
        v.sync()
        assert v.wait_for_meaning(WAIT)
        assert v._recall.embedded() == [4, 4]
        assert first(v, "wie fotografiere ich meinen Bildschirm") == "Help/Take a screenshot.md"


def test_an_edited_english_note_is_found_across_languages_by_what_it_says_now(tmp_path: Path) -> None:
    with Vault(tmp_path / "vault", max_staleness=0, embedder=MultilingualEmbedder(), english=EnglishEmbedder()) as v:
        write_notes(v)
        assert v.wait_for_meaning(WAIT)
        (v.root / "Help" / "Clearing a paper jam.md").write_text(
            "Water the tomato plants every evening in summer, and feed them once a week.\n", encoding="utf-8"
        )
        v.sync()
        assert v.wait_for_meaning(WAIT)
        assert first(v, "Wann soll ich die Tomaten gießen?") == "Help/Clearing a paper jam.md"
        assert first(v, "Wie bekomme ich ein eingeklemmtes Blatt aus dem Drucker?") != "Help/Clearing a paper jam.md"


class Broken(Counting):
    """An English model that cannot be loaded (a damaged install)."""

    def __init__(self) -> None:
        super().__init__(EnglishEmbedder())

    def load(self) -> None:
        raise RuntimeError("model file damaged")


def test_without_the_english_model_every_note_goes_to_the_multilingual_one(tmp_path: Path) -> None:
    with Vault(tmp_path / "vault", embedder=MultilingualEmbedder(), english=Broken()) as vault:
        write_notes(vault)
        assert vault.wait_for_meaning(WAIT)
        assert vault._recall.embedded() == [len(NOTES)]
        assert first(vault, "my notebook is burning my legs") == "Help/My computer gets really hot.md"


def test_english_notes_are_embedded_by_the_multilingual_model_when_the_english_one_goes_missing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "vault"
    with Vault(root, embedder=MultilingualEmbedder(), english=EnglishEmbedder()) as before:
        write_notes(before)
        assert before.wait_for_meaning(WAIT)
    multilingual = Counting(MultilingualEmbedder())
    with Vault(root, embedder=multilingual, english=Broken()) as without:
        assert without.wait_for_meaning(WAIT)
        assert sorted(t.split("\n")[0] for t in multilingual.texts if "\n" in t) == sorted(p[5:-3] for p in ENGLISH)
        assert first(without, "my notebook is burning my legs") == "Help/My computer gets really hot.md"
    # Back with both: the English notes return to the English model, each note held by one model again.
    english = Counting(EnglishEmbedder())
    with Vault(root, embedder=MultilingualEmbedder(), english=english) as again:
        assert again.wait_for_meaning(WAIT)
        assert english.texts == []  # its vectors of the same versions were kept
        assert again._recall.embedded() == [3, 5]
        assert first(again, "grab a snap of my monitor") == "Help/Take a screenshot.md"


# A 10 MB note is hundreds of chunks for each model (its English ones get the multilingual model's second
# vectors too): about 30 s of one core, alone; with the suite's other workers on two cores, several times that.
@pytest.mark.timeout(300)
def test_hostile_notes_go_through_both_models_without_stopping_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "Odd").mkdir(parents=True)
    (root / "Odd" / "Huge.md").write_text("log line with nothing special in it\n" * 300_000)  # ~10 MB, English
    (root / "Odd" / "Empty.md").write_bytes(b"")
    (root / "Odd" / "Binary.md").write_bytes(bytes(range(256)) * 4096 + b"\x00\xff" * 50_000)
    (root / "Odd" / "Long word.md").write_text("the " + "a" * 100_000 + " and it is", encoding="utf-8")
    english = Counting(EnglishEmbedder())
    with Vault(root, embedder=MultilingualEmbedder(), english=english) as vault:
        write_notes(vault)
        assert vault.wait_for_meaning(4 * WAIT)
        assert sum(vault._recall.embedded()) == len(NOTES) + 4
        assert sum(text.startswith("Huge\n") for text in english.texts) == 32
        assert first(vault, "grab a snap of my monitor") == "Help/Take a screenshot.md"
