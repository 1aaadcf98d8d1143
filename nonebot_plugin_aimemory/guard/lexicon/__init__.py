"""The word classes steering is recognised by, one module per language: Chinese, English and
German, which measurably add on public corpora (bench.guard), and Japanese and Korean, which
have none to measure on but keep kana and Hangul read when the model check fails; every
other language is left to the model check (`model_check.py`). A class says who is addressed,
the verbs of each shape (throwing away what came before, taking on a new identity, showing
the hidden prompt, dropping the limits) and the nouns they take. `steering_shapes.py`
builds the patterns of each shape from them, so a new wording of a known structure is
caught by adding a word to its class, not a phrase.

A class is a string of entries separated by "|". In an entry, a space stands for any short
run of blanks or marks (or none: "offlimits"), an apostrophe may be left out, and a final
"*" lets any letters follow (a stem: "ignor*" is "ignore", "ignorez", "ignoriere").
Entries are folded like the text they are matched in (`normalise.py`), so they are written
as people write them: "vorherigen", "無視して", "무시해"."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The word classes of one language (an empty class: the language has no such words,
    or needs none for the shape)."""

    name: str
    # Words are separated by blanks (gaps are counted in words) or not (in characters).
    spaced: bool
    # Who an order is given to, and what may stand before it in its clause: politeness,
    # "now", modal verbs, the addressee ("请你现在", "please now", "you must").
    order: str
    you: str
    your: str
    now: str
    # Throwing away what came before: the verbs, "don't" + "follow", predicates after the
    # object ("…are void"), and the objects.
    discard: str = ""
    stop: str = ""
    follow: str = ""
    void: str = ""
    # A new rule for how to answer, given from now on: "you will only answer in emoji".
    must: str = ""
    reply: str = ""
    earlier: str = ""
    determiners: str = ""
    earlier_alone: str = ""
    instructions: str = ""
    rules: str = ""
    given: str = ""
    before: str = ""
    # Showing the hidden prompt: the verbs, the nouns, and questions about it.
    show: str = ""
    hidden: str = ""
    text: str = ""
    question: str = ""
    question_after: str = ""
    # A new identity: "you are (now) X", "you are called X", "your new name is X", "act as".
    you_be: str = ""
    be: str = ""
    named: str = ""
    article: str = ""
    noun_end: str = ""
    characters: str = ""
    persona: str = ""
    name_nouns: str = ""
    new: str = ""
    is_: str = ""
    play: str = ""
    play_after: str = ""
    # Dropping the limits: "have no" + limits said to "you" (or as an order), "no"/"without"
    # + limits in a sentence to "you" (or "for you" after them), "remove" + limits, modes.
    for_you: str = ""
    lack: str = ""
    without: str = ""
    limits: str = ""
    safeguards: str = ""
    lift: str = ""
    enter: str = ""
    mode_name: str = ""
    mode: str = ""
    # Raw patterns (lookahead bodies): what right after a verb makes it no order (a
    # negation, "了" of what happened), and what after "you are now" is no noun.
    not_after: str = ""
    not_x: str = ""


def lexicons() -> tuple[Lexicon, ...]:
    """Every language's word classes."""
    from . import de, en, ja, ko, zh

    return tuple(module.LEXICON for module in (zh, en, ja, ko, de))
