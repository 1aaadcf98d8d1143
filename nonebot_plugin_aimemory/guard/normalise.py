"""The form of a text that steering patterns are matched against: what a reader (or a model)
sees, with the tricks that only change the code points undone: compatibility forms,
accents, invisible and filler characters, look-alike letters of other scripts, and spaces
or dots put between Chinese characters."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import NamedTuple

from .invisible import codes_in, invisible_codes

# Letters of Cyrillic, Greek, Armenian and Latin small capitals that look like a Latin
# letter, mapped to it (case by case: Cyrillic "Н" looks like "H", its lower case "н" does
# not look like "h").
_LOOK_ALIKES = {
    # Cyrillic capitals А В С Е Н І Ј К М О Р Ѕ Т Х У Ү Ӏ Ԛ Ԝ
    "\u0410": "A",
    "\u0412": "B",
    "\u0421": "C",
    "\u0415": "E",
    "\u041d": "H",
    "\u0406": "I",
    "\u0408": "J",
    "\u041a": "K",
    "\u041c": "M",
    "\u041e": "O",
    "\u0420": "P",
    "\u0405": "S",
    "\u0422": "T",
    "\u0425": "X",
    "\u0423": "Y",
    "\u04ae": "Y",
    "\u04c0": "I",
    "\u051a": "Q",
    "\u051c": "W",
    # Cyrillic small а с ԁ е һ і ј к о р ԛ ѕ ѵ ԝ х у ү ӏ ь
    "\u0430": "a",
    "\u0441": "c",
    "\u0501": "d",
    "\u0435": "e",
    "\u04bb": "h",
    "\u0456": "i",
    "\u0458": "j",
    "\u043a": "k",
    "\u043e": "o",
    "\u0440": "p",
    "\u051b": "q",
    "\u0455": "s",
    "\u0475": "v",
    "\u051d": "w",
    "\u0445": "x",
    "\u0443": "y",
    "\u04af": "y",
    "\u04cf": "l",
    "\u044c": "b",
    # Greek capitals Α Β Ε Ζ Η Ι Κ Μ Ν Ο Ρ Τ Υ Χ
    "\u0391": "A",
    "\u0392": "B",
    "\u0395": "E",
    "\u0396": "Z",
    "\u0397": "H",
    "\u0399": "I",
    "\u039a": "K",
    "\u039c": "M",
    "\u039d": "N",
    "\u039f": "O",
    "\u03a1": "P",
    "\u03a4": "T",
    "\u03a5": "Y",
    "\u03a7": "X",
    # Greek small α γ ε η ι κ ν ο ρ τ υ χ ω
    "\u03b1": "a",
    "\u03b3": "y",
    "\u03b5": "e",
    "\u03b7": "n",
    "\u03b9": "i",
    "\u03ba": "k",
    "\u03bd": "v",
    "\u03bf": "o",
    "\u03c1": "p",
    "\u03c4": "t",
    "\u03c5": "u",
    "\u03c7": "x",
    "\u03c9": "w",
    # Armenian small օ ս
    "\u0585": "o",
    "\u057d": "u",
    # Latin dotless i and j, script a and g, iota
    "\u0131": "i",
    "\u0237": "j",
    "\u0251": "a",
    "\u0261": "g",
    "\u0269": "i",
}
# Latin small capitals ᴀ ʙ ᴄ ᴅ ᴇ ꜰ ɢ ʜ ɪ ᴊ ᴋ ʟ ᴍ ɴ ᴏ ᴘ ʀ ꜱ ᴛ ᴜ ᴠ ᴡ ʏ ᴢ
_SMALL_CAPITALS = "\u1d00\u0299\u1d04\u1d05\u1d07\ua730\u0262\u029c\u026a\u1d0a\u1d0b\u029f\u1d0d\u0274\u1d0f\u1d18\u0280\ua731\u1d1b\u1d1c\u1d20\u1d21\u028f\u1d22"

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
# Curly quotes read as straight ones ({“role”: “system”} is still a forged message).
_QUOTES = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}


@functools.cache
def _folded_chars() -> dict[str, str]:
    """What each character that is not read as written is read as ("" for the invisible
    ones and for combining marks); built on first use, since the invisible table is."""
    return {
        **_LOOK_ALIKES,
        **dict(zip(_SMALL_CAPITALS, "abcdefghijklmnoprstuvwyz", strict=True)),
        **dict.fromkeys(_LINE_BREAKS, "\n"),
        **_QUOTES,
        **dict.fromkeys(map(chr, invisible_codes()), ""),
        **dict.fromkeys(map(chr, codes_in(_COMBINING_MARK_RANGES)), ""),
    }


# Characters `_folded_chars` may hold: everything but ASCII, Chinese characters and CJK
# punctuation, which most chat text is made of (so most of it is skipped at C speed).
_MAYBE_FOLDED = re.compile("[^\x00-\x7f\u3000-\u303f\u4e00-\u9fff]")
# Blanks other than line breaks are read as spaces, and a run of spaces as one (each
# pattern starts with a character class, which the regex engine skips ahead to).
_OTHER_BLANK = re.compile("[\t\r\f\v]")
_SPACE_RUN = re.compile(" {2,}")

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Between two Chinese characters, blanks and decorative marks only break a word for the
# eye ("忽 略 之 前", "忽.略"); clause punctuation (，。、：；！？) is kept, because it
# really separates what it stands between.
_GAP_BEFORE_HAN = re.compile(
    f"[\\s\\-_.·・•*~/\\\\|+=^`'\"\u2010-\u2015\u2022\u2027\u30fb]+(?=[{_HAN}])"
)


def fold_for_matching(text: str) -> str:
    """`text` as matched for steering: compatibility forms folded (NFKD, so full-width
    letters and punctuation become ASCII), accents dropped, invisible and filler
    characters (`invisible.py`) removed, look-alike letters mapped to Latin, curly quotes
    straight, lower case, a run of blanks one space. Line breaks stay."""
    folded = unicodedata.normalize("NFKD", text)
    if not folded.isascii():
        folded = _MAYBE_FOLDED.sub(_fold_char, folded)
    folded = folded.lower()
    if "\t" in folded or "\r" in folded or "\f" in folded or "\v" in folded:
        folded = _OTHER_BLANK.sub(" ", folded)
    if "  " in folded:
        folded = _SPACE_RUN.sub(" ", folded)
    return folded


class Joined(NamedTuple):
    """Folded text with the blanks between Chinese characters removed, and where they were
    (the position of the character each stood before)."""

    text: str
    blanks: frozenset[int]


def join_han_gaps(folded: str) -> Joined:
    """`folded` with blanks and decorative marks between Chinese characters removed
    ("忽 略 之 前 的 指 令" reads "忽略之前的指令")."""
    if folded.isascii():
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
