"""Chinese-aware tokenisation (jieba's cuts, see `jieba_cuts`): the search terms that both
searches index and query with (`terms`), and the token sets that the memory rules compare
texts by (`token_set`)."""

from __future__ import annotations

import operator
import re
import unicodedata
from functools import lru_cache

from . import jieba_cuts

_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[\w\u3400-\u9fff\uf900-\ufaff]", re.UNICODE)
# A run of Han characters, or a word of any other script (letters and digits, apostrophes
# inside: "john's", "don't"); everything else separates terms.
_CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TERM_PIECE = re.compile(
    rf"(?P<han>[{_CJK_CHARS}]+)|(?P<word>[^\W_{_CJK_CHARS}]+(?:['\u2019][^\W_{_CJK_CHARS}]+)*)"
)
_APOSTROPHE = re.compile("['\u2019]")
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_VOWELS = frozenset("aeiou")
SHORT_CJK_RUN_CHARS = 4
# The save rules' token sets (near duplicates, reworded tombstones) keep the small list they
# were tuned with; search drops the fuller lists of `stopwords.py`, from queries only.
RULE_STOPWORDS = frozenset(
    [
        "的",
        "了",
        "是",
        "在",
        "我",
        "你",
        "他",
        "她",
        "它",
        "们",
        "和",
        "与",
        "及",
        "或",
        "也",
        "就",
        "都",
        "而",
        "及",
        "着",
        "过",
        "吗",
        "呢",
        "吧",
        "啊",
        "呀",
        "哦",
        "嗯",
        "这",
        "那",
        "有",
        "没",
        "不",
        "很",
        "还",
        "又",
        "被",
        "把",
        "让",
        "给",
        "对",
        "从",
        "到",
        "为",
        "以",
        "之",
        "其",
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "to",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "for",
        "with",
    ]
)


# Small: hits come from one text cut several times within a turn, not across turns.
@lru_cache(maxsize=256)
def _cut(text: str) -> tuple[str, ...]:
    return tuple(jieba_cuts.cutter().cut_for_search(text, True))


def tokens(text: str) -> list[str]:
    """The tokens the save rules compare texts by: jieba words (lower-cased, no punctuation
    or stopwords) plus the character bigrams of short CJK runs, which jieba often splits
    badly (names). Search uses `terms` instead."""
    result: list[str] = []
    for word in _cut(text):
        word = word.strip().lower()
        if word and word not in RULE_STOPWORDS and _WORD.search(word):
            result.append(word)
    for run in _CJK_RUN.findall(text):
        if 2 < len(run) <= SHORT_CJK_RUN_CHARS:
            result.extend(run[i : i + 2] for i in range(len(run) - 1))
    return result


def terms(text: str) -> list[str]:
    """The search terms of `text`, as indexed and as asked (`words`, normalised)."""
    return [normalised(word) for word in words(text)]


def words(text: str) -> list[str]:
    """The words of `text` before normalisation, lower-cased: jieba's search-mode words of
    each Han run, plus character bigrams where jieba found no word (see `_han_words`), and
    the words of other scripts, split at apostrophes and without a possessive "'s"."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    result: list[str] = []
    for piece in _TERM_PIECE.finditer(folded):
        han = piece.group("han")
        if han is not None:
            result.extend(_han_words(han))
            continue
        parts = _APOSTROPHE.split(_without_accents(piece.group("word")))
        if len(parts) > 1 and parts[-1] == "s":
            parts.pop()  # "john's" -> "john"
        result.extend(parts)
    return result


def _without_accents(word: str) -> str:
    """A Latin word without its accents ("café" -> "cafe"), as FTS5's unicode61 tokenizer
    indexes it; words of other scripts are kept whole."""
    if word.isascii():
        return word
    bare = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
    return bare if bare.isascii() else word


# Words repeat (a chat's vocabulary is small): each row and query normalises a dozen.
@lru_cache(maxsize=8192)
def normalised(word: str) -> str:
    """A light, symmetric normal form: English plurals and inflections meet their base form
    ("cats" -> "cat", "parties"/"party" -> "parti", "talked"/"talking" -> "talk",
    "making"/"make" -> "mak"), ordinals their number ("2nd" -> "2"), and numbers lose
    leading zeros ("05" -> "5"). The rules are Porter's (1980) steps 1a-1c and the final e
    of 5a, without his measure conditions: a stemmer this light only needs both sides to
    meet, not to give real stems; irregular forms ("made") stay apart."""
    if word.isdigit():
        return word.lstrip("0") or "0"
    ordinal = _ORDINAL.match(word)
    if ordinal:
        return ordinal.group(1).lstrip("0") or "0"
    if not word.isascii() or not word.isalpha():
        return word
    # Words of three letters keep a final s or e ("gas", "bus", "use"): too short to tell.
    if len(word) > 3:
        word = _without_inflection(_singular(word))
        while len(word) > 3 and word.endswith("e"):  # "agree", "agreed" -> "agr"
            word = word[:-1]
    if len(word) > 2 and word.endswith("y") and word[-2] not in _VOWELS:
        word = word[:-1] + "i"
    return word


def _singular(word: str) -> str:
    if word.endswith(("sses", "ies")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _without_inflection(word: str) -> str:
    """Without "-ed" or "-ing" when at least three letters with a vowel remain ("bed",
    "sing", "string" stay), a doubled final consonant undone ("stopped" -> "stop")."""
    for suffix in ("ing", "ed"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and _VOWELS.intersection(stem):
            if stem[-1] == stem[-2] and stem[-1] not in _VOWELS and stem[-1] not in "lsz":
                stem = stem[:-1]
            return stem
    return word


def in_dictionary(word: str) -> bool:
    """Whether jieba's dictionary knows `word` (a bigram of `words` may be no word at all)."""
    return jieba_cuts.cutter().has_word(word)


def _han_words(run: str) -> list[str]:
    """jieba's search-mode words of a Han run, and the character bigrams of every stretch
    of two or more single characters: where the dictionary knows no word (a name, slang,
    网络用语) jieba falls back to single characters, and bigrams find such a word whatever
    its context, in the index and in a query alike. A stretch's bigrams follow its
    characters, before the next longer word."""
    result: list[str] = []
    singles: list[str] = []
    for word in _cut_exact(run):
        if len(word) == 1:
            singles.append(word)
        elif singles:
            result += map(operator.add, singles, singles[1:])
            singles = []
        result.append(word)
    result += map(operator.add, singles, singles[1:])
    return result


# Dictionary words only (no HMM guesses at unknown words): the HMM joins characters by
# their context, so one name could be cut differently in a message and in a query; the
# bigrams above cover unknown words instead.
@lru_cache(maxsize=256)
def _cut_exact(run: str) -> tuple[str, ...]:
    return tuple(jieba_cuts.cutter().cut_for_search(run, False))


def token_set(text: str) -> frozenset[str]:
    """The distinct tokens of `text`."""
    return frozenset(tokens(text))


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    """Dice coefficient of two token sets (1.0 = same tokens)."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))
