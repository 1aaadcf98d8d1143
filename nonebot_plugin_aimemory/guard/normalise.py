"""The form of a text that steering patterns are matched against: what a reader (or a model)
sees, with the tricks that only change the code points undone: compatibility forms,
accents, invisible and filler characters, look-alike letters of other scripts
(`lookalikes.py`), letters spelt out one by one ("i.g.n.o.r.e"), digits for letters
("1gn0r3"), and spaces or dots put between Chinese characters."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import NamedTuple

from .invisible import char_class, codes_in, invisible_codes, ranges_of
from .lookalikes import SMALL_CAPITALS, read_look_alikes

# Accents and other combining marks on letters (as NFKD leaves them).
_COMBINING_MARK_RANGES = (
    (0x0300, 0x036F),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE20, 0xFE2F),
)
# Unicode line breaks other than "\n", read as one.
_LINE_BREAKS = "\x85\u2028\u2029"
# Curly quotes read as straight ones ({“role”: “system”} is still a forged message); the
# German sharp s as the "ss" it is often written as.
_QUOTES = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "ß": "ss"}


@functools.cache
def _folded_chars() -> dict[str, str]:
    """What each character that is not read as written is read as ("" for the invisible
    ones and for combining marks); built on first use, since the invisible table is."""
    return {
        **SMALL_CAPITALS,
        **dict.fromkeys(_LINE_BREAKS, "\n"),
        **_QUOTES,
        **dict.fromkeys(map(chr, invisible_codes()), ""),
        **dict.fromkeys(map(chr, codes_in(_COMBINING_MARK_RANGES)), ""),
    }


@functools.cache
def _maybe_folded() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Exactly the characters `_folded_chars` holds, those of the Basic Multilingual Plane
    and those above it (tags, variation selectors): the text between them is skipped at C
    speed, and a class of the BMP only is tested several times faster."""
    codes = sorted(map(ord, _folded_chars()))
    basic = [code for code in codes if code <= 0xFFFF]
    above = [code for code in codes if code > 0xFFFF]
    return (
        re.compile(f"[{char_class(ranges_of(basic))}]"),
        re.compile(f"[{char_class(ranges_of(above))}]"),
    )


_ABOVE_BMP = re.compile("[\U00010000-\U0010ffff]")
_HANGUL_JAMO = re.compile("[\u1100-\u11ff]")
# Latin letters NFKD leaves alone (dotless i, script a), Greek, Cyrillic and Armenian: where
# look-alikes are; Hangul jamo; and everything above the Basic Multilingual Plane.
_RARE_SCRIPTS = re.compile("[\u0100-\u058f\u1100-\u11ff\U00010000-\U0010ffff]")


# Blanks other than line breaks are read as spaces, and a run of spaces as one (each
# pattern starts with a character class, which the regex engine skips ahead to).
_OTHER_BLANK = re.compile("[\t\r\f\v]")
_SPACE_RUN = re.compile(" {2,}")

# Letters spelt out one by one, the same mark between each: "i.g.n.o.r.e", "i-g-n-o-r-e",
# "i g n o r e" read "ignore"; two letters are enough with a mark other than a blank ("n.o"
# reads "no", "a.m." "am", which no rule minds). The first pattern is a cheap test.
_SPELT_MARKS = ".\\-_*~+|/·•"
_MAYBE_SPELT_BY_MARKS = re.compile(f"[{_SPELT_MARKS}][a-z][{_SPELT_MARKS} ]")
_MAYBE_SPELT_BY_BLANKS = re.compile(" [b-hj-z] [a-z] ")
_SPELT_OUT = re.compile(
    f"(?<![^\\W_])[a-z](?:([{_SPELT_MARKS}])(?:[a-z]\\1)*|( )[a-z]\\2(?:[a-z]\\2)*)[a-z](?![^\\W_])"
)
# Digits written for the letters they look like, inside a word of Latin letters
# ("1gn0r3", "pr0mpt", "y0u"): a word that has both is read with letters. Found where a
# digit touches a letter, then widened to its word.
_LEET_SIGNS = "013457"
# (The digit first, which the regex engine skips ahead to; a letter before it, or after.)
_MAYBE_LEET = re.compile(f"[{_LEET_SIGNS}](?:(?<=[a-z][{_LEET_SIGNS}])|[a-z])")
_LEET_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_LEET_LETTERS = str.maketrans(_LEET_SIGNS, "oieast")


def fold_for_matching(text: str) -> str:
    """`text` as matched for steering: compatibility forms folded (NFKD, so full-width
    letters and punctuation become ASCII), accents dropped, invisible and filler
    characters (`invisible.py`) removed, disguised Latin words read in Latin letters,
    curly quotes straight, lower case, a run of blanks one space, letters spelt out one by
    one and digits written for letters read as the word. Line breaks stay."""
    folded = unicodedata.normalize("NFKD", text)
    if not folded.isascii():
        folded = _fold_non_ascii(folded)
    folded = folded.lower()
    if "\t" in folded or "\r" in folded or "\f" in folded or "\v" in folded:
        folded = _OTHER_BLANK.sub(" ", folded)
    if _MAYBE_SPELT_BY_MARKS.search(folded) or _MAYBE_SPELT_BY_BLANKS.search(folded):
        folded = _SPELT_OUT.sub(_spelt_word, folded)
    if "  " in folded:
        folded = _SPACE_RUN.sub(" ", folded)
    if _MAYBE_LEET.search(folded) is not None:
        folded = _letters_for_digits(folded)
    return folded


def _fold_non_ascii(folded: str) -> str:
    """The folds only text beyond ASCII needs; the rarer ones only where a character of
    theirs stands (one scan finds out)."""
    basic, above = _maybe_folded()
    folded = basic.sub(_fold_char, folded)
    if _RARE_SCRIPTS.search(folded) is None:
        return folded
    if _ABOVE_BMP.search(folded) is not None:
        folded = above.sub(_fold_char, folded)
    folded = read_look_alikes(folded)
    if _HANGUL_JAMO.search(folded) is not None:
        # NFKD takes Hangul syllables apart: put them together again, so that a gap of a
        # few characters is a few syllables.
        folded = unicodedata.normalize("NFC", folded)
    return folded


def _spelt_word(match: re.Match[str]) -> str:
    return match.group(0).replace(match.group(1) or match.group(2), "")


def _letters_for_digits(folded: str) -> str:
    """`folded` with the digits of each word that mixes them with letters read as letters."""
    pieces: list[str] = []
    kept_until = 0
    for touch in _MAYBE_LEET.finditer(folded):
        if touch.start() < kept_until:
            continue  # inside a word already read
        start, end = touch.start(), touch.start() + 1
        while start > kept_until and folded[start - 1] in _LEET_WORD_CHARS:
            start -= 1
        while end < len(folded) and folded[end] in _LEET_WORD_CHARS:
            end += 1
        pieces += [folded[kept_until:start], folded[start:end].translate(_LEET_LETTERS)]
        kept_until = end
    return "".join(pieces) + folded[kept_until:]


_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Between two Chinese characters, blanks and decorative marks only break a word for the
# eye ("忽 略 之 前", "忽.略"); clause punctuation (，。、：；！？) and quotes are kept,
# because they really separate what they stand between.
_GAP_BEFORE_HAN = re.compile(
    f"[\\s\\-_.·・•*~/\\\\|+=^`\u2010-\u2015\u2022\u2027\u30fb]+(?=[{_HAN}])"
)


_ANY_HAN = re.compile(f"[{_HAN}]")


class Joined(NamedTuple):
    """Folded text with the blanks between Chinese characters removed, and where they were
    (the position of the character each stood before)."""

    text: str
    blanks: frozenset[int]


def join_han_gaps(folded: str) -> Joined:
    """`folded` with blanks and decorative marks between Chinese characters removed
    ("忽 略 之 前 的 指 令" reads "忽略之前的指令")."""
    if folded.isascii() or _ANY_HAN.search(folded) is None:
        return Joined(folded, frozenset())  # no Chinese characters
    pieces: list[str] = []
    blanks: list[int] = []
    kept_until = removed = 0
    # Gaps are rarer than Chinese characters: found first, their left side checked here.
    for gap in _GAP_BEFORE_HAN.finditer(folded):
        start, end = gap.span()
        if start > 0 and is_han(folded[start - 1]):
            pieces.append(folded[kept_until:start])
            kept_until = end
            removed += end - start
            blanks.append(end - removed)
    if not blanks:
        return Joined(folded, frozenset())
    pieces.append(folded[kept_until:])
    return Joined("".join(pieces), frozenset(blanks))


def _fold_char(match: re.Match[str]) -> str:
    char = match.group(0)
    return _folded_chars().get(char, char)


def is_han(char: str) -> bool:
    """Whether `char` is a Chinese character (CJK unified or compatibility ideograph)."""
    return "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"
