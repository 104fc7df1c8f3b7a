"""Consent: what is untrusted (:mod:`bot.consent.untrusted`), the one rule that says ask or run
(:mod:`bot.consent.rule`), the questions waiting for the person's answer (:mod:`bot.consent.questions`), and
the sources the words a tainted run wrote keep (:mod:`bot.consent.provenance`)."""

from bot.consent.provenance import Provenance, Span, note_source, origins, with_sources
from bot.consent.questions import CALLING, Question, Questions, Waiting
from bot.consent.rule import Policy, question_for
from bot.consent.untrusted import (
    LABELS_NOTE,
    Taint,
    Untrusted,
    label,
    labelled_parts,
    neutralise,
    own_words,
    person_addresses,
    profile_block,
    same_address,
    sent_link,
    taint_of,
    unlabelled,
)

__all__ = [
    "CALLING",
    "LABELS_NOTE",
    "Policy",
    "Provenance",
    "Question",
    "Span",
    "Questions",
    "Taint",
    "Untrusted",
    "Waiting",
    "label",
    "labelled_parts",
    "neutralise",
    "note_source",
    "origins",
    "own_words",
    "person_addresses",
    "profile_block",
    "question_for",
    "same_address",
    "sent_link",
    "taint_of",
    "unlabelled",
    "with_sources",
]
