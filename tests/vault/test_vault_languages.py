"""Telling a note's language, which related notes are ordered by."""

from __future__ import annotations

import pytest

from vault.languages import english_words, language_of, reads_as_english


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("The boiler was serviced on Tuesday and the engineer said that it is fine for a year.", "en"),
        ("Der Kessel wurde am Dienstag gewartet und der Techniker sagt, dass er ein Jahr hält.", "de"),
        ("La chaudière a été révisée mardi et le technicien dit que tout est en ordre pour un an.", "fr"),
        ("La caldera se revisó el martes y el técnico dice que está bien para todo el año.", "es"),
        ("東京旅行の計画：浅草寺と築地市場に行く。", "ja"),
        ("猫在温暖的窗台上睡觉。", "zh"),
        ("고양이가 따뜻한 창턱에서 자고 있다.", "ko"),
        ("Кошка спит на тёплом подоконнике.", "cyrillic"),
    ],
)
def test_a_notes_language_is_told_by_its_script_and_its_common_words(text: str, language: str) -> None:
    assert language_of(text) == language


def test_front_matter_does_not_count_and_too_little_text_tells_nothing() -> None:
    note = "---\ntitle: the note of the day\ntags: [and, the, of]\n---\nLe chat dort sur le rebord et il est content.\n"
    assert language_of(note) == "fr"
    assert language_of("Milk, eggs") is None
    assert language_of("") is None


@pytest.mark.parametrize("text", ["\x00" * 1000, "a" * 10_000_000, "\ud800 broken surrogate", "--- \n---\n---"])
def test_odd_and_huge_text_gets_an_answer_at_once(text: str) -> None:
    assert language_of(text) in (None, "en")


@pytest.mark.parametrize(
    ("question", "english"),
    [
        ("skip the password prompt when the machine boots", True),  # too short to tell by common words
        ("burn my holiday photos onto a blank disc", True),
        ("Is the boiler serviced this year?", True),
        ("Bildschirm vorlesen", False),
        ("Wozu dient die Taste mit dem Windows-Logo?", False),
        ("quiero borrar a alguien que ya no usa el ordenador", False),
        ("la fecha del examen", False),
        ("猫の写真", False),
        ("", False),
    ],
)
def test_a_question_reads_as_english_by_its_common_words_or_else_by_the_english_models_words(
    question: str, english: bool
) -> None:
    assert reads_as_english(question, english_words) is english
