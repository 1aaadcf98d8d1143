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

from .classes import Lexicon as Lexicon


def lexicons() -> tuple[Lexicon, ...]:
    """Every language's word classes."""
    from . import de, en, ja, ko, zh

    return tuple(module.LEXICON for module in (zh, en, ja, ko, de))
