"""Which letters the steering rules can read: those of the scripts their languages are
written in (Latin, Chinese, kana, Hangul, and the forms `normalise.py` folds into them).
Text in any other script (Cyrillic, Greek, Thai, Arabic…) passes the rules unread, so it
is saved to a shared scope only when the model check read it."""

from __future__ import annotations

import functools
import unicodedata

# The first word of a letter's Unicode name, for the scripts the rules read.
READ_SCRIPTS = frozenset(
    {"LATIN", "CJK", "HIRAGANA", "KATAKANA", "HANGUL", "FULLWIDTH",
     "HALFWIDTH", "MATHEMATICAL", "MODIFIER", "SMALL", "CIRCLED", "PARENTHESIZED",
     "SQUARED", "NEGATIVE"}
)  # fmt: skip


def unread_letters(text: str) -> int:
    """How many letters of `text` are in scripts the rules do not read."""
    return sum(1 for char in text if char.isalpha() and not _is_read(char))


@functools.cache
def _is_read(char: str) -> bool:
    return unicodedata.name(char, "").split(" ", 1)[0] in READ_SCRIPTS
