"""Search by meaning with the real model shipped in the package: real vault folders, real SQLite files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.vault.embedders import WAIT, Counting, Gated
from vault import Vault

NOTES = {
    ("Recipes", "Ana's lasagne"): "Layers of pasta, ricotta, spinach and tomato sauce. Bake 45 minutes at 180 °C.",
    ("Notes", "Embed files"): "Put an exclamation mark before a wikilink to show a PDF or an image inside the page.",
    ("Health", "Dentist"): "Appointment moved to Thursday at 3pm, Dr Okafor, bring the X-rays.",
    ("Inbox", "Post office"): "Sent my tax forms to the accountant on Monday.",
    ("Inbox", "Things to do"): "Call the bank about my card, sent them my address already.",
    ("Garden", "Spring plans"): "Tomatoes along the south fence, basil in pots, compost the leaves.",
}


@pytest.fixture
def embedder() -> Counting:
    return Counting()


@pytest.fixture
def notes(tmp_path: Path, embedder: Counting) -> Iterator[Vault]:
    with Vault(tmp_path / "vault", max_staleness=0, embedder=embedder) as vault:
        for (folder, title), content in NOTES.items():
            vault.write(folder, title, content)
        assert vault.wait_for_meaning(WAIT)
        yield vault


def paths(hits: list) -> list[str]:
    return [hit.path for hit in hits]


def test_questions_that_share_no_words_with_their_note_find_it_first(notes: Vault) -> None:
    # Keyword search finds nothing for any of these; the first two share common words with other notes.
    assert paths(notes.search("that pasta dish I wrote down"))[0] == "Recipes/Ana's lasagne.md"
    assert paths(notes.search("embedding pictures"))[0] == "Notes/Embed files.md"
    assert paths(notes.search("my teeth checkup"))[0] == "Health/Dentist.md"
    assert paths(notes.search("vegetable patch"))[0] == "Garden/Spring plans.md"


def test_keyword_queries_still_win_where_they_should(notes: Vault) -> None:
    assert paths(notes.search("Okafor"))[0] == "Health/Dentist.md"
    assert paths(notes.search("basil"))[0] == "Garden/Spring plans.md"
    hit = notes.search("ricotta spinach")[0]
    assert hit.path == "Recipes/Ana's lasagne.md" and "ricotta" in hit.snippet


def test_a_note_found_by_meaning_is_held_to_the_tags_and_folder_asked_for(notes: Vault) -> None:
    assert "Health/Dentist.md" not in paths(notes.search("my teeth checkup", folder="Garden"))
    assert "Health/Dentist.md" in paths(notes.search("my teeth checkup", folder="Health"))


def test_related_gives_up_to_three_notes_closest_in_meaning_never_the_note_itself(notes: Vault) -> None:
    written = notes.write("Recipes", "Sunday pasta bake", "Oven pasta with cheese and tomato for the family lunch.")
    related = notes.related(written.path)
    assert 1 <= len(related) <= 3
    assert related[0].path == "Recipes/Ana's lasagne.md" and related[0].title == "Ana's lasagne"
    assert written.path not in paths(related)


def test_an_edit_on_disk_re_embeds_that_note_and_only_it(tmp_path: Path, notes: Vault, embedder: Counting) -> None:
    before = len(embedder.texts)
    (notes.root / "Inbox" / "Things to do.md").write_text("Book the flights to Tokyo for the holiday.\n")
    notes.sync()
    assert notes.wait_for_meaning(WAIT)
    assert embedder.texts[before:] == ["Things to do\nBook the flights to Tokyo for the holiday."]
    assert paths(notes.search("a trip to Japan"))[0] == "Inbox/Things to do.md"
    notes.close()
    # An unchanged vault, opened again, embeds nothing.
    again = Counting()
    with Vault(notes.root, embedder=again) as reopened:
        assert reopened.wait_for_meaning(WAIT)
        assert again.texts == []
        assert paths(reopened.search("my teeth checkup"))[0] == "Health/Dentist.md"


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_missing_or_corrupt_meaning_index_is_rebuilt_and_words_answer_meanwhile(
    tmp_path: Path, notes: Vault, damage: str
) -> None:
    notes.close()
    vectors = notes.root / ".vaultbot" / "vectors.db"
    for suffix in ("-wal", "-shm"):
        vectors.with_name(vectors.name + suffix).unlink(missing_ok=True)
    if damage == "missing":
        vectors.unlink()
    else:
        vectors.write_bytes(b"this is not a database" * 100)
    slow = Counting()
    slow.load = lambda: None  # the model is loaded lazily by the first embed, after the search below
    with Vault(notes.root, embedder=slow) as reopened:
        assert paths(reopened.search("Okafor")) == ["Health/Dentist.md"]  # by words, while it rebuilds
        assert reopened.wait_for_meaning(WAIT)
        assert len([text for text in slow.texts if text != "Okafor"]) == len(NOTES)  # each note once
        assert paths(reopened.search("my teeth checkup"))[0] == "Health/Dentist.md"


def test_search_answers_by_meaning_with_what_is_embedded_while_the_rest_waits(notes: Vault) -> None:
    notes.close()
    for number in range(40):
        (notes.root / "Inbox" / f"Shopping list {number}.md").write_text(f"Milk, bread and {number} eggs.\n")
    gated = Gated()
    with Vault(notes.root, embedder=gated) as reopened:
        try:
            assert reopened.wait_for_meaning(WAIT, all_notes=False)
            # 40 notes wait to be embedded; the six embedded before answer by meaning.
            assert paths(reopened.search("my teeth checkup"))[0] == "Health/Dentist.md"
            assert not reopened.wait_for_meaning(0.1)
        finally:
            gated.gate.set()
        assert reopened.wait_for_meaning(WAIT)
        assert paths(reopened.search("eggs for breakfast", limit=50)).count("Health/Dentist.md") == 0


def test_related_names_the_note_in_its_own_language_before_translations(tmp_path: Path, embedder: Counting) -> None:
    with Vault(tmp_path / "vault", embedder=embedder) as notes:
        notes.write(
            "Notes",
            "Fix a flat bike tyre",
            "Take the wheel off, lever the tyre away from the rim, find the hole in the inner tube by pumping it up "
            "and listening, then patch it and put everything back.",
        )
        notes.write(
            "Notes",
            "Réparer un pneu de vélo crevé",
            "Démonter la roue, décoller le pneu de la jante, trouver le trou de la chambre à air en la gonflant et "
            "en écoutant, puis la rustiner et tout remonter.",
        )
        notes.write(
            "Notes",
            "自転車のパンク修理",
            "車輪を外し、タイヤをリムから外して、チューブに空気を入れて音を聞いて穴を見つけ、パッチを貼って元に戻す。",
        )
        assert notes.wait_for_meaning(WAIT)
        written = notes.write(
            "Inbox",
            "Puncture on the way to work",
            "Got a puncture on the way to work. Need to patch the inner tube tonight.",
        )
        # By similarity alone the Japanese translation comes first (0.42 against 0.36 for the English note).
        assert paths(notes.related(written.path)) == [
            "Notes/Fix a flat bike tyre.md",
            "Notes/自転車のパンク修理.md",
            "Notes/Réparer un pneu de vélo crevé.md",
        ]


LANGUAGES = {
    "English": "The cat sleeps on the warm windowsill.",
    "German": "Die Katze schläft auf der warmen Fensterbank.",
    "French": "Le chat dort sur le rebord chaud de la fenêtre.",
    "Spanish": "Receta de la abuela: tortilla de patatas con cebolla.",
    "Italian": "Il gatto dorme sul davanzale caldo.",
    "Portuguese": "O gato dorme no parapeito quente da janela.",
    "Dutch": "De kat slaapt op de warme vensterbank.",
    "Polish": "Kot śpi na ciepłym parapecie.",
    "Russian": "Кошка спит на тёплом подоконнике.",
    "Ukrainian": "Кіт спить на теплому підвіконні.",
    "Turkish": "Kedi sıcak pencere pervazında uyuyor.",
    "Arabic": "القطة تنام على حافة النافذة الدافئة.",
    "Hebrew": "החתול ישן על אדן החלון החם.",
    "Persian": "گربه روی لبه گرم پنجره خوابیده است.",
    "Hindi": "बिल्ली गर्म खिड़की पर सो रही है।",
    "Bengali": "বিড়ালটি উষ্ণ জানালার তাকে ঘুমাচ্ছে।",
    "Tamil": "பூனை சூடான ஜன்னல் ஓரத்தில் தூங்குகிறது.",
    "Telugu": "పిల్లి వెచ్చని కిటికీ మీద నిద్రపోతోంది.",
    "Thai": "แมวนอนอยู่บนขอบหน้าต่างที่อบอุ่น",
    "Chinese": "猫在温暖的窗台上睡觉。",
    "Japanese": "東京旅行の計画：浅草寺と築地市場に行く。",
    "Korean": "고양이가 따뜻한 창턱에서 자고 있다.",
    "Vietnamese": "Con mèo ngủ trên bậu cửa sổ ấm áp.",
    "Indonesian": "Kucing tidur di ambang jendela yang hangat.",
    "Swahili": "Paka analala kwenye dirisha lenye joto.",
    "Greek": "Η γάτα κοιμάται στο ζεστό περβάζι.",
    "Armenian": "Կատուն քնում է տաք պատուհանագոգին։",
    "Georgian": "კატა თბილ ფანჯრის რაფაზე სძინავს.",
    "Amharic": "ድመቷ በሞቃታማው መስኮት ላይ ትተኛለች።",
    "Burmese": "ကြောင်သည် နွေးထွေးသော ပြတင်းပေါက်ပေါ်တွင် အိပ်နေသည်။",
    "Khmer": "ឆ្មាកំពុងដេកលើមាត់បង្អួចដ៏កក់ក្តៅ។",
    "Sinhala": "පූසා උණුසුම් ජනෙල් පඩිය මත නිදයි.",
    "Mongolian": "Муур дулаан цонхны тавцан дээр унтаж байна.",
    "Urdu": "بلی گرم کھڑکی پر سو رہی ہے۔",
    "Finnish": "Kissa nukkuu lämpimällä ikkunalaudalla.",
}


def test_hostile_and_odd_notes_are_embedded_without_stopping_the_rest(tmp_path: Path, embedder: Counting) -> None:
    root = tmp_path / "vault"
    (root / "Odd").mkdir(parents=True)
    (root / "Odd" / "Huge.md").write_text("log line with nothing special in it\n" * 300_000)  # ~10 MB
    (root / "Odd" / "Empty.md").write_bytes(b"")
    (root / "Odd" / "Binary.md").write_bytes(bytes(range(256)) * 4096 + b"\x00\xff" * 50_000)
    (root / "Languages").mkdir()
    for language, text in LANGUAGES.items():
        (root / "Languages" / f"{language}.md").write_text(text + "\n", encoding="utf-8")
    with Vault(root, embedder=embedder) as notes:
        assert notes.wait_for_meaning(WAIT)
        assert len(LANGUAGES) == 35
        # Every note has vectors; the huge one only for its first chunks.
        assert notes._recall is not None and sum(notes._recall.embedded()) == len(LANGUAGES) + 3
        assert sum(text.startswith("Huge\n") for text in embedder.texts) == 32
        # Across languages: an English question finds the Spanish and the Japanese note.
        assert "Languages/Spanish.md" in paths(notes.search("potato omelette recipe", limit=3))
        assert "Languages/Japanese.md" in paths(notes.search("travel plans for Tokyo", limit=3))
        # A word found in one note puts it first; the same sentence in other languages follows by meaning.
        assert paths(notes.search("Fensterbank"))[0] == "Languages/German.md"


def test_search_by_meaning_needs_no_network(tmp_path: Path) -> None:
    """A fresh process with every proxy pointing at a dead port loads both models and searches by meaning."""
    script = """
import sys
from vault import EnglishEmbedder, MultilingualEmbedder, Vault
with Vault(sys.argv[1], embedder=MultilingualEmbedder(), english=EnglishEmbedder()) as notes:
    notes.write("Health", "Dentist", "Appointment moved to Thursday at 3pm, Dr Okafor. Bring the X-rays.")
    notes.write("Garden", "Spring plans", "Tomatoes along the south fence, basil in pots.")
    notes.write("Notizen", "Zahnarzt", "Der Termin ist am Donnerstag um 15 Uhr, die Röntgenbilder mitbringen.")
    assert notes.wait_for_meaning(60)
    assert notes._recall.embedded() == [1, 2], notes._recall.embedded()
    print(notes.search("my teeth checkup")[0].path)
"""
    dead = "http://127.0.0.1:9"
    env = {
        **os.environ,
        "HTTP_PROXY": dead,
        "HTTPS_PROXY": dead,
        "ALL_PROXY": dead,
        "http_proxy": dead,
        "https_proxy": dead,
        "NO_PROXY": "",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "vault")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Health/Dentist.md"
