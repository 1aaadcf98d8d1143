"""Personal identifiers masked before a memory is stored: mainland mobile numbers, resident
ID numbers (18 digits with their check digit, and the old 15-digit ones) and bank cards,
however they are written — separated by any run of punctuation, symbols or blanks
("138_1234_5678", "138、1234、5678", "(+86)138～1234～5678"), in the digits of any script or
style (full-width, Arabic-Indic, Devanagari, Thai, mathematical bold…: every Unicode decimal
digit, and superscript or circled ones), with invisible characters inside (`invisible.py`,
the guard's table), glued to letters. The masks match a folded copy of the text and mask the
characters of the text as written, so nothing outside a masked number changes. Checksums,
dates and number prefixes (`identifiers.py`) keep prices, dates, group numbers and order
numbers unmasked."""

from __future__ import annotations

import functools
import itertools
import re
import string
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from .identifiers import (
    CARD_LENGTHS,
    ID_PROVINCES,
    MOBILE_SECOND_DIGITS,
    is_bank_card,
    is_mobile,
    is_valid_id_card,
    is_valid_old_id_card,
)
from .invisible import char_class, invisible_class, invisible_codes, ranges_of
from .pii_fold import fold_for_masks

MASK = "*"

# What the masks match in the folded copy (`pii_fold.py`), where every digit form and every
# compatibility X already reads as ASCII.
_DIGITS = "0-9"
_CHECK_X = "Xx"  # the ID check character X
# Everything above the Basic Multilingual Plane that may stand between digit groups is a
# symbol (emoji, pictographs) or a character of a historic script (its digits and
# mathematical letters are folded to ASCII first): the whole Supplementary Multilingual
# Plane separates, as one range (a class of its exact symbols is checked range
# by range, several times slower).
_SUPPLEMENTARY_MULTILINGUAL_PLANE = (0x10000, 0x1FFFF)
_MIN_PII_DIGITS = 11  # a mobile number; nothing shorter is masked


def _is_separator(char: str) -> bool:
    """What people put between the digit groups of one number: any punctuation, symbol or
    blank (a tab, not a line break: a line break ends a number)."""
    category = unicodedata.category(char)
    return category[0] in "PS" or category == "Zs" or char == "\t"


@functools.cache
def _separator_ranges() -> tuple[tuple[int, int], ...]:
    """Code point ranges of the visible separators (built on first use: some 20 ms)."""
    basic = [code for code in range(0x10000) if _is_separator(chr(code))]
    return (*ranges_of(basic), _SUPPLEMENTARY_MULTILINGUAL_PLANE)


@functools.cache
def _digit_run() -> re.Pattern[str]:
    """A maximal run of digits with any separators or invisible characters (`invisible.py`:
    "138\u200b1234…" reads as one number) between them, an ID's X at its end.

    Linear: separators and digits are disjoint classes, and a run is taken whole from its
    leftmost digit, so no digit is a start twice; runs too short for any identifier are
    dropped by `mask_pii` before they are parsed."""
    separators = char_class(_separator_ranges()) + invisible_class()
    return re.compile(f"[{_DIGITS}](?:[{separators}]*[{_DIGITS}])*[{_CHECK_X}]?")


_DIGIT_CHARS = frozenset(string.digits + _CHECK_X)
_GROUP = re.compile("[0-9]+X?")


@functools.cache
def _as_digits() -> dict[int, str | None]:
    """How a folded run is read before it is split into groups: an X upper case, invisible
    characters dropped (so "138\u200b1234" is one group), except the Braille blank, a
    symbol that shows as a space and separates like one; every other separator left
    standing, to separate groups."""
    return {
        ord("x"): "X",
        **dict.fromkeys(code for code in invisible_codes() if not _is_separator(chr(code))),
    }


def mask_pii(text: str) -> str:
    """`text` with the identifying digits of mobiles (the middle four), ID numbers (all but
    the first three and last four) and bank cards (all but the last four) replaced by `*`;
    separators, prefixes and surrounding text stay as written."""
    folded = fold_for_masks(text)
    masked: list[str] | None = None
    for match in _digit_run().finditer(folded.text):
        if match.end() - match.start() < _MIN_PII_DIGITS:
            continue
        for position in _Run.parse(match).positions_to_mask():
            if masked is None:
                masked = list(text)
            masked[folded.origin(position)] = MASK
    return text if masked is None else "".join(masked)


def is_personal_number(text: str) -> bool:
    """Whether `text` holds a number `mask_pii` masks (a QQ number never is one)."""
    return mask_pii(text) != text


@dataclass(slots=True)
class _Run:
    """A run of digit groups as written: its digits run together (ASCII, a final "X" for
    an ID), where each digit stands in the text, and where each group starts."""

    digits: str
    positions: list[int]  # text position of each digit
    group_starts: list[int]  # offset in `digits` of each group, then len(digits)
    group_at: dict[int, int]  # offset in `digits` -> the group starting there (or the end)
    long_groups: list[int]  # prefix counts of groups of 3+ digits
    single_groups: list[int]  # prefix counts of one-digit groups

    @classmethod
    def parse(cls, run: re.Match[str]) -> _Run:
        """The groups of a `_digit_run()` match."""
        written = run.group(0)
        groups = _GROUP.findall(written.translate(_as_digits()))
        sizes = [len(group) for group in groups]
        group_starts = [0, *itertools.accumulate(sizes)]
        offset = run.start()
        return cls(
            "".join(groups),
            [offset + i for i, char in enumerate(written) if char in _DIGIT_CHARS],
            group_starts,
            {start: index for index, start in enumerate(group_starts)},
            [0, *itertools.accumulate(size >= 3 for size in sizes)],
            [0, *itertools.accumulate(size == 1 for size in sizes)],
        )

    def positions_to_mask(self) -> list[int]:
        """Text positions of the digits to mask: the whole run when it is one identifier,
        else the identifiers found in it, leftmost first, each made of whole groups."""
        last = len(self.group_starts) - 2
        whole = self._identify(0, last, may_be_card=True)
        if whole is not None:
            return whole
        found: list[int] = []
        first = 0
        while first <= last:
            span = self._identifier_from(first)
            if span is None:
                first += 1
                continue
            end_group, positions = span
            found.extend(positions)
            first = end_group + 1
        return found

    def _identifier_from(self, first: int) -> tuple[int, list[int]] | None:
        """The longest identifier of whole groups starting at group `first`, and its last
        group. A card is read only in one group or a whole run: any 16 digits of a longer
        list of numbers pass Luhn one time in ten."""
        start = self.group_starts[first]
        for length, may_start in _SPAN_KINDS:
            after = self.group_at.get(start + length)
            if after is None or not may_start(self.digits, start):
                continue
            positions = self._identify(first, after - 1, may_be_card=after == first + 1)
            if positions is not None:
                return after - 1, positions
        if self.group_starts[first + 1] - start in CARD_LENGTHS:
            positions = self._identify(first, first, may_be_card=True)
            if positions is not None:
                return first, positions
        return None

    def _identify(self, first: int, last: int, *, may_be_card: bool) -> list[int] | None:
        """Positions to mask if groups `first`..`last` are one identifier, else None."""
        start, end = self.group_starts[first], self.group_starts[last + 1]
        if end - start < _MIN_PII_DIGITS or not self._evenly_grouped(first, last):
            return None
        digits = self.digits[start:end]
        for masks in _MASKERS:
            kept = masks(digits, may_be_card)
            if kept is not None:
                head, tail = kept
                return self.positions[start + head : end - tail]
        return None

    def _evenly_grouped(self, first: int, last: int) -> bool:
        """One group, or groups all of three digits or more ("138 1234 5678"), or all of
        one digit (spaced out): a list of small numbers ("1 3 5 7 9 11 13") is neither."""
        count = last - first + 1
        return (
            count == 1
            or self.long_groups[last + 1] - self.long_groups[first] == count
            or self.single_groups[last + 1] - self.single_groups[first] == count
        )


def _may_be_id_card(digits: str, start: int) -> bool:
    return digits[start : start + 2] in ID_PROVINCES


def _may_be_prefixed_mobile(digits: str, start: int) -> bool:
    return digits.startswith(("861", "00861"), start)


def _may_be_mobile(digits: str, start: int) -> bool:
    return digits.startswith("1", start) and digits[start + 1 : start + 2] in MOBILE_SECOND_DIGITS


# The lengths an identifier spanning several groups has, longest first, with a cheap test
# of its first digits (so that long runs of numbers are scanned fast).
_SPAN_KINDS: tuple[tuple[int, Callable[[str, int], bool]], ...] = (
    (18, _may_be_id_card),
    (15, _may_be_id_card),
    (15, _may_be_prefixed_mobile),
    (13, _may_be_prefixed_mobile),
    (11, _may_be_mobile),
)


def _mask_id_card(digits: str, _may_be_card: bool) -> tuple[int, int] | None:
    if len(digits) == 18 and is_valid_id_card(digits):
        return 3, 4
    if len(digits) == 15 and is_valid_old_id_card(digits):
        return 3, 4
    return None


def _mask_bank_card(digits: str, may_be_card: bool) -> tuple[int, int] | None:
    return (0, 4) if may_be_card and is_bank_card(digits) else None


def _mask_mobile(digits: str, _may_be_card: bool) -> tuple[int, int] | None:
    if is_mobile(digits):
        return 3, 4
    for prefix in ("86", "0086"):
        if digits.startswith(prefix) and is_mobile(digits[len(prefix) :]):
            return len(prefix) + 3, 4
    return None


# Each says which digits to keep, (first n, last n), or None if the digits are not its kind.
_MASKERS: tuple[Callable[[str, bool], tuple[int, int] | None], ...] = (
    _mask_id_card,
    _mask_bank_card,
    _mask_mobile,
)
