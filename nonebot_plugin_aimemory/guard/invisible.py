"""The characters nobody sees: every format character (Unicode category Cf: zero-width
spaces and joiners, bidi marks and isolates, the soft hyphen, the BOM, invisible operators,
tag characters…) and the fillers that are not format characters but show nothing either.
The guard drops them before matching and the masks read through them, so one table serves
both: a trick that hides a phrase from one hides a number from neither."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

# Not category Cf, yet blank or invisible: the combining grapheme joiner, Hangul fillers,
# Khmer inherent vowels, Mongolian free variation selectors, the Braille blank, variation
# selectors, and the unassigned code points of the invisible-operator and tag blocks.
FILLER_RANGES = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels AQ and AA
    (0x180B, 0x180F),  # Mongolian free variation selectors (U+180E, the separator, is Cf)
    (0x2065, 0x2065),  # unassigned, between the invisible operators and the bidi isolates
    (0x2800, 0x2800),  # Braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors 1-16 (U+FE0F asks for an emoji's colour)
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0xE0000, 0xE007F),  # the tag block, its unassigned code points included
    (0xE0100, 0xE01EF),  # variation selectors 17-256
)
# Every Cf character lies in these planes (Basic and Supplementary Multilingual, and the
# Supplementary Special-purpose plane of the tags); the others hold letters, ideographs and
# private use only. Scanning them takes some 20 ms, once, on the first use.
_PLANES_WITH_FORMAT_CHARACTERS = (range(0x20000), range(0xE0000, 0xE1000))


@functools.cache
def invisible_codes() -> frozenset[int]:
    """The code points of every invisible character: category Cf and the fillers."""
    format_codes = (
        code
        for plane in _PLANES_WITH_FORMAT_CHARACTERS
        for code in plane
        if unicodedata.category(chr(code)) == "Cf"
    )
    return frozenset((*format_codes, *codes_in(FILLER_RANGES)))


@functools.cache
def invisible_class() -> str:
    """The invisible characters as the inside of a regex character class (ranges)."""
    return char_class(ranges_of(sorted(invisible_codes())))


def codes_in(ranges: Iterable[tuple[int, int]]) -> list[int]:
    """Every code point of inclusive (first, last) ranges."""
    return [code for low, high in ranges for code in range(low, high + 1)]


def char_class(ranges: Iterable[tuple[int, int]]) -> str:
    """Inclusive (first, last) code point ranges as the inside of a regex character class."""
    return "".join(
        re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        for low, high in ranges
    )


def ranges_of(codes: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted code points as runs of consecutive ones, (first, last) each."""
    ranges: list[tuple[int, int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return ranges
