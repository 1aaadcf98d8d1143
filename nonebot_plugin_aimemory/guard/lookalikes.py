"""Letters of other scripts that look like Latin ones ("іgnоrе" with Cyrillic і, о, е), and
when a word is read through them: a word that mixes them with Latin letters is a disguised
Latin word; a word of Cyrillic or Greek letters only ("привет", "ΣΥΣΤΗΜΑ") is a word of its
script and is left as written, never misread as a Latin one."""

from __future__ import annotations

import functools
import re

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
_SMALL_CAPITALS = (
    "\u1d00\u0299\u1d04\u1d05\u1d07\ua730\u0262\u029c\u026a\u1d0a\u1d0b\u029f"
    "\u1d0d\u0274\u1d0f\u1d18\u0280\ua731\u1d1b\u1d1c\u1d20\u1d21\u028f\u1d22"
)

# Latin small capitals are Latin letters: read as such wherever they stand.
SMALL_CAPITALS = dict(zip(_SMALL_CAPITALS, "abcdefghijklmnoprstuvwyz", strict=True))


@functools.cache
def _any_look_alike() -> re.Pattern[str]:
    return re.compile(f"[{''.join(sorted(_LOOK_ALIKES))}]")


@functools.cache
def _touching_latin() -> re.Pattern[str]:
    """A look-alike letter next to a Latin one: where a disguised word is."""
    look_alikes = "".join(sorted(_LOOK_ALIKES))
    return re.compile(f"[a-zA-Z][{look_alikes}]|[{look_alikes}][a-zA-Z]")


def read_look_alikes(text: str) -> str:
    """`text` with each disguised Latin word (one that mixes look-alike letters with Latin
    ones) spelt in Latin letters, case kept; words of other scripts stay as written."""
    touching = _touching_latin()
    if _any_look_alike().search(text) is None or touching.search(text) is None:
        return text
    pieces: list[str] = []
    kept_until = 0
    for touch in touching.finditer(text):
        if touch.start() < kept_until:
            continue  # inside a word already read
        start, end = touch.start(), touch.end()
        while start > kept_until and _is_letter(text[start - 1]):
            start -= 1
        while end < len(text) and _is_letter(text[end]):
            end += 1
        word = text[start:end].translate(_LATIN_FOR_LOOK_ALIKE)
        pieces += [text[kept_until:start], word]
        kept_until = end
    return "".join(pieces) + text[kept_until:]


def _is_letter(char: str) -> bool:
    return char.isalpha() and not char >= "\u3040"  # Latin, Greek, Cyrillic, Armenian


_LATIN_FOR_LOOK_ALIKE = str.maketrans(_LOOK_ALIKES)
