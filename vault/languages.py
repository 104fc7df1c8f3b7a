"""Which language a note is written in, told cheaply: by its script, and for Latin script by its commonest words.

Used to prefer notes in a note's own language among those close in meaning: the multilingual model puts a
note and its translation close together, so a new English note's French translation can come out closer than
another English note on the same subject. Nothing needs more than "same language or not", so this is a small
rule, not a model: kana means Japanese, Hangul Korean, Han without kana Chinese, any other non-Latin script
is named by its script, and Latin text is the language whose short function words it uses most.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

from vault import frontmatter

# Enough of a note to tell its language; more costs time and tells nothing new.
_SAMPLE = 2000
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# The commonest short words of each language; a word on two lists tells nothing and is left out.
_FUNCTION_WORDS = {
    "en": "the and of to is in that it for with was on are this be as you at have not but from they his".split(),
    "de": "der die das und ist nicht ein eine ich mit sich auf dem den zu auch es wird sind von bei oder".split(),
    "fr": "le la les et est un une des du pas que qui dans pour sur au avec ce il elle vous sont mais ou".split(),
    "es": "el los las y del al lo su sus como pero más muy está hay puede cuando también esta este ya".split(),
    "it": "il gli che di è una per non sono della nel con questo anche come ma più da alla".split(),
    "pt": "o os que não uma do da em para com é ao mas por seu sua são também dos das".split(),
    "nl": "het een en van is niet dat op te zijn met voor ook aan maar er bij wordt kan".split(),
}
_OWNER = {
    word: language
    for language, words in _FUNCTION_WORDS.items()
    for word in words
    if sum(word in others for others in _FUNCTION_WORDS.values()) == 1
}
# (first code point, last code point, script) for the scripts that name their language or family.
_SCRIPTS = (
    (0x3040, 0x30FF, "ja"),  # hiragana and katakana
    (0xAC00, 0xD7AF, "ko"),
    (0x1100, 0x11FF, "ko"),
    (0x4E00, 0x9FFF, "han"),
    (0x0400, 0x04FF, "cyrillic"),
    (0x0370, 0x03FF, "greek"),
    (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"),
    (0x0900, 0x097F, "devanagari"),
    (0x0E00, 0x0E7F, "thai"),
)


def language_of(text: str) -> str | None:
    """The language of a note's text (front matter left aside): an ISO 639-1 code, or a script's name where
    the script is what can be told; None when too little text says."""
    _front, body = frontmatter.parse(text[: _SAMPLE * 2])
    body = body[:_SAMPLE]
    counts: dict[str, int] = {}
    latin = 0
    for char in body:
        point = ord(char)
        if point < 0x0250:
            latin += char.isalpha()
            continue
        for first, last, script in _SCRIPTS:
            if first <= point <= last:
                counts[script] = counts.get(script, 0) + 1
                break
    if counts:
        script, letters = max(counts.items(), key=lambda item: item[1])
        if letters > latin:
            if script == "han":
                return "ja" if counts.get("ja") else "zh"
            return script
    votes: dict[str, int] = {}
    for word in _WORD.findall(body.lower()):
        language = _OWNER.get(word)
        if language is not None:
            votes[language] = votes.get(language, 0) + 1
    if not votes:
        return None
    ranked = sorted(votes.values(), reverse=True)
    best = max(votes, key=lambda language: votes[language])
    if ranked[0] < 2 or (len(ranked) > 1 and ranked[0] < 1.5 * ranked[1]):
        return None
    return best


# Share of its words that must be English words for a text too short to tell by its common words.
_ENGLISH_SHARE = 0.8


def reads_as_english(text: str, vocabulary: Callable[[], Container[str]]) -> bool:
    """Whether a question or a short note is in English: told by its common words as :func:`language_of` tells,
    and when it is too short for that ("skip the password prompt when the machine boots", a list of links), by
    its words: at least 80 % of them whole words of the English model's ``vocabulary`` (a German or Spanish
    text rarely is: "Ordner", "patatas", "träge"). A name or an odd word or two still reads as English."""
    told = language_of(text)
    if told is not None:
        return told == "en"
    _front, body = frontmatter.parse(text[: _SAMPLE * 2])
    words = _WORD.findall(body[:_SAMPLE])
    known = vocabulary()
    return bool(words) and sum(word.lower() in known for word in words) >= _ENGLISH_SHARE * len(words)


@dataclass(frozen=True)
class _Vocabulary:
    """The whole English words of a WordPiece vocabulary: asked of the tokenizer itself, which the English model
    holds anyway (a set of its 21,745 words took 5 MB)."""

    tokenizer: Any

    def __contains__(self, word: object) -> bool:
        return (
            isinstance(word, str)
            and word.isalpha()
            and word.isascii()
            and self.tokenizer.token_to_id(word) is not None
        )


@functools.cache
def english_words() -> Container[str]:
    """The whole English words of all-MiniLM-L6-v2's vocabulary (21,745, lower case), as its packaged tokenizer
    knows them: the words the English model knows."""
    from vault.minilm import tokenizer

    return _Vocabulary(tokenizer())
