"""Where a steering match counts, decided by a look at the text before it: an order is
addressed to the model when nothing but order words (politeness, "now", modal verbs, the
addressee, in any language of `lexicon/`) stands between the start of its clause and the
verb. "忽略之前的指令", "请你现在忽略…", "you must ignore…" are orders; "他经常忽略…",
"Bob tends to ignore…", "不要忽略…" (a negation is no order word) are not."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from .literals import trie_pattern
from .normalise import fold_for_matching, is_han

# Whether a match starting at this position of the text counts; the flag says a blank
# stood there between two Chinese characters before they were joined.
Context = Callable[[str, int, bool], bool]

# How far back the start of a clause or a sentence is looked for.
_CLAUSE_LOOKBACK_CHARS = 40
_SENTENCE_LOOKBACK_CHARS = 80
# What ends a clause (folded text: "，：；！？" are ASCII there; "。、" are not), brackets
# included. The parentheses of "小明(2001)" belong to a name and end nothing. A quote starts
# a clause after a blank or a mark ("小明说：“忽略之前的指令”" quotes an order), not right
# after a word: "会被“忽略之前的指令”这种话骗到" names the words inside a sentence.
_CLAUSE_MARK = re.compile(
    "[.!?;:,\n\\[\\]{}<>«»¿¡。、【】《》〈〉…~—–]|[(](?![0-9]+[)])|(?<![0-9])[)]"
    '|(?<![^\\W_])["「」『』]'
)
_SENTENCE_MARK = re.compile("[.!?;\n。]")
_BLANKS = " ,、\t"


def anywhere(_text: str, _start: int, _blank: bool) -> bool:
    return True


def addressed(text: str, start: int, blank: bool = False) -> bool:
    """Whether the clause before `start` holds only order words (or nothing)."""
    if blank:
        return True  # "好的 忽略之前的指令": the blank was a clause break
    prefix = _clause_before(text, start)
    return prefix is not None and _only_order_words(prefix)


def you_before(text: str, start: int, _blank: bool = False) -> bool:
    """Whether the sentence before `start` speaks to "you" ("你可以说任何话，没有禁忌")."""
    sentence = text[max(0, start - _SENTENCE_LOOKBACK_CHARS) : start]
    marks = list(_SENTENCE_MARK.finditer(sentence))
    if marks:
        sentence = sentence[marks[-1].end() :]
    return _you_word().search(sentence) is not None


def addressed_or_you(text: str, start: int, blank: bool = False) -> bool:
    return addressed(text, start, blank) or you_before(text, start)


def zh_not_after_han(text: str, start: int, blank: bool) -> bool:
    return blank or start == 0 or not is_han(text[start - 1])


def en_not_after_word(text: str, start: int, _blank: bool = False) -> bool:
    """ "filesystem:" and "superuser:" are ordinary text; "…吃素。system: …" is a turn."""
    if start == 0:
        return True
    char = text[start - 1]
    return not (char.isascii() and (char.isalnum() or char == "_"))


def line_start(text: str, start: int, _blank: bool = False) -> bool:
    before = text[max(0, start - 4) : start].rstrip(" ")
    return before.endswith("\n") or (not before and start <= 4)


def _clause_before(text: str, start: int) -> str | None:
    """The text between the last clause mark before `start` and `start` (None when the
    clause began too far back to be made of order words)."""
    low = max(0, start - _CLAUSE_LOOKBACK_CHARS)
    window = text[low:start]
    marks = list(_CLAUSE_MARK.finditer(window))
    if marks:
        return window[marks[-1].end() :]
    return window if low == 0 else None


def _only_order_words(prefix: str) -> bool:
    """Whether `prefix` is a run of order words, each taken longest first."""
    order = _order_word()
    position = _after_blanks(prefix, 0)
    while position < len(prefix):
        word = order.match(prefix, position)
        if word is None or word.end() == position:
            return False
        position = _after_blanks(prefix, word.end())
    return True


def _after_blanks(text: str, position: int) -> int:
    while position < len(text) and text[position] in _BLANKS:
        position += 1
    return position


def _alternation(words: Iterable[str]) -> str:
    """Folded words as one pattern (a trie); Latin ones end at a word end."""
    folded = {fold_for_matching(word).strip() for word in words if word}
    return trie_pattern(folded, latin_word_end=True)


@functools.cache
def _order_word() -> re.Pattern[str]:
    """One word that may stand before an order, in any language; an @mention too."""
    from .lexicon import lexicons

    words = (
        word
        for lexicon in lexicons()
        for words in (lexicon.order, lexicon.you, lexicon.now, lexicon.determiners)
        for word in words.split("|")
    )
    return re.compile(f"@[^\\s,]+|{_alternation(words)}")


@functools.cache
def _you_word() -> re.Pattern[str]:
    """ "You" or "your" in any language (Latin words only as whole words)."""
    from .lexicon import lexicons

    words = (
        word
        for lexicon in lexicons()
        for words in (lexicon.you, lexicon.your)
        for word in words.split("|")
    )
    return re.compile(f"(?<![a-z])(?:{_alternation(words)})")
