"""Where a steering match counts, decided by a look at the few characters before it (not by
lookbehinds tried at every position): not after a negation, at the start of an order or a
line, at a word start."""

from __future__ import annotations

from collections.abc import Callable

from .normalise import is_han
from .steering_words import (
    EN_NEGATIONS,
    EN_ORDER_MARKS,
    EN_ORDER_WORD,
    ZH_NEGATIONS,
    ZH_ORDER_WORDS,
    ZH_ORDERS_TO_PLAY,
)

# Whether a match starting at this position of the text counts; the flag says a blank
# stood there between two Chinese characters before they were joined.
Context = Callable[[str, int, bool], bool]


def anywhere(_text: str, _start: int, _blank: bool) -> bool:
    return True


def zh_not_negated(text: str, start: int, _blank: bool = False) -> bool:
    return not text[max(0, start - 2) : start].endswith(ZH_NEGATIONS)


def zh_not_after_han(text: str, start: int, blank: bool) -> bool:
    return blank or start == 0 or not is_han(text[start - 1])


def zh_order(text: str, start: int, blank: bool) -> bool:
    """At the start of a clause, or after a word that introduces an order; "群里之前的
    规则全部作废" is news, not an order."""
    if not zh_not_negated(text, start):
        return False
    return zh_not_after_han(text, start, blank) or text[max(0, start - 3) : start].endswith(
        ZH_ORDER_WORDS
    )


def en_word_start(text: str, start: int, _blank: bool = False) -> bool:
    return start == 0 or not ("a" <= text[start - 1] <= "z")


def en_not_negated(text: str, start: int, _blank: bool = False) -> bool:
    return en_word_start(text, start) and not text[max(0, start - 6) : start].endswith(EN_NEGATIONS)


def en_not_negated_nor_infinitive(text: str, start: int, _blank: bool = False) -> bool:
    """Not "don't ignore…" nor "tends to ignore the rules"."""
    return en_not_negated(text, start) and not text[max(0, start - 3) : start].endswith("to ")


def en_not_after_word(text: str, start: int, _blank: bool = False) -> bool:
    """ "filesystem:" and "superuser:" are ordinary text; "…吃素。system: …" is a turn."""
    if start == 0:
        return True
    char = text[start - 1]
    return not (char.isascii() and (char.isalnum() or char == "_"))


def en_order(text: str, start: int, _blank: bool = False) -> bool:
    """At a line or sentence start, or after "please", "now", "must", "will"."""
    before = text[max(0, start - 8) : start].rstrip(" ")
    return not before or before[-1] in EN_ORDER_MARKS or bool(EN_ORDER_WORD.search(before))


def after_an_order_to_play(text: str, start: int, _blank: bool = False) -> bool:
    """ "扮演" as an order ("请扮演", "现在开始扮演", "你要扮演"), not "他在话剧里扮演"."""
    return text[max(0, start - 4) : start].endswith(ZH_ORDERS_TO_PLAY)


def line_start(text: str, start: int, _blank: bool = False) -> bool:
    before = text[max(0, start - 4) : start].rstrip(" ")
    return before.endswith("\n") or (not before and start <= 4)
