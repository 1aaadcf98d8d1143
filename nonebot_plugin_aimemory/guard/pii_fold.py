"""The copy of a text the PII masks (`pii.py`) match: every way of writing a digit read as the
ASCII digit — the decimal digits of every script and style (Unicode category Nd: full-width,
Arabic-Indic, Devanagari, Thai, mathematical bold…) and the other digit forms (superscript,
circled) — and a letter whose compatibility form is ASCII (full-width, mathematical) read as
that; with where each character of the copy stands in the text, so that a mask lands on the
characters as written and the rest of the text stays as it is."""

from __future__ import annotations

import enum
import functools
import unicodedata
from dataclasses import dataclass


class _Kind(enum.Enum):
    """What a character is to the masks: a decimal digit, another digit form, or neither."""

    DECIMAL = enum.auto()
    OTHER_DIGIT = enum.auto()
    NOT_A_DIGIT = enum.auto()


@dataclass(frozen=True, slots=True)
class Folded:
    """A text as the masks read it, and the position in the text of each of its characters
    (None when every character stands where it stood)."""

    text: str
    origins: list[int] | None = None

    def origin(self, position: int) -> int:
        """Where the character at `position` of the folded text stands in the text."""
        return position if self.origins is None else self.origins[position]


def fold_for_masks(text: str) -> Folded:
    """`text` with its digits in ASCII and its compatibility letters in ASCII; a superscript
    or circled digit next to a plain one set apart by a space."""
    if text.isascii():
        return Folded(text)
    pieces: list[str] = []
    origins: list[int] = []
    previous = _Kind.NOT_A_DIGIT
    for position, char in enumerate(text):
        read, kind = _reading(char)
        if _Kind.NOT_A_DIGIT not in (kind, previous) and kind is not previous:
            # A footnote or list mark beside a number is no digit of it ("13812345678¹",
            # "①13812345678"): its own group, as it was before digit forms were read.
            pieces.append(" ")
            origins.append(position)
        pieces.append(read)
        origins.extend([position] * len(read))
        previous = kind
    folded = "".join(pieces)
    return Folded(folded, None if len(folded) == len(text) else origins)


@functools.lru_cache(maxsize=4096)
def _reading(char: str) -> tuple[str, _Kind]:
    """How the masks read one character, and whether it is a digit."""
    value = unicodedata.decimal(char, None)
    if value is not None:
        return str(value), _Kind.DECIMAL
    value = unicodedata.digit(char, None)
    if value is not None:
        return str(value), _Kind.OTHER_DIGIT
    if not char.isascii() and unicodedata.category(char)[0] == "L":
        compatible = unicodedata.normalize("NFKC", char)
        if compatible.isascii() and compatible.isalpha():
            return compatible, _Kind.NOT_A_DIGIT
    return char, _Kind.NOT_A_DIGIT
