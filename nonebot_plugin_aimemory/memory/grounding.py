"""Whether a fact a background writer (the reviewer, the extraction before a fold) drew from
chat lines is held by what those lines state. Nobody asked for these facts and nobody reads
them before they are saved, and a real small model pads its answer (issue #36): a member's
question filed as what they "want to know", a guess, a fact no line held. A fact is kept
only when most of its words, the people it names aside, are in the lines it was drawn
from, and some of them in what the lines state: a line that only asks ("学吉他难吗？")
tells nothing about the one who asks."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..text import segmenter
from .rules import addresses_the_bot, is_question

# At least this share of a fact's tokens (names and QQ numbers aside) must be in the lines:
# a fact in the model's own words ("开的车是" for "我的…") keeps more than half of them.
MIN_GROUNDED_SHARE = 0.5
# ... and this share in what they state, their questions aside: a fact drawn from a
# statement and the question after it ("周末爬山还是看电影？我觉得爬山更好") keeps a third.
MIN_STATED_SHARE = 0.25
# Sentences end at these marks or a line break; a clause ends at a comma or semicolon.
_SENTENCE = re.compile(r"[^。！？!?\n]*[。！？!?\n]*")
_CLAUSE_BREAK = re.compile(r"[，,；;、]")
# `小明(20001)` in a line or a fact: who it is about, not what it says.
_PERSON = re.compile(r"[^\s()（）：:\[\]]{1,32}[(（]\d{5,11}[)）]")


def statements(text: str) -> str:
    """`text` without what it asks: a sentence ending as a question loses its last clause
    ("我的车提示胎压低，是不是该补胎了？" keeps "我的车提示胎压低"; "学吉他难吗？" keeps
    nothing)."""
    kept: list[str] = []
    for sentence in _SENTENCE.findall(text):
        if not sentence.strip():
            continue
        if is_question(sentence):
            clauses = _CLAUSE_BREAK.split(sentence)
            sentence = "，".join(clauses[:-1])
        kept.append(sentence)
    return "".join(kept)


def grounded_shares(fact: str, lines: Iterable[str]) -> tuple[float, float]:
    """The shares of `fact`'s tokens, the people it names aside, found in `lines` and in
    what they state (both 1.0 when nothing but people is left to check)."""
    people = {token for match in _PERSON.findall(fact) for token in segmenter.token_set(match)}
    tokens = segmenter.token_set(_PERSON.sub(" ", fact)) - people
    if not tokens:
        return 1.0, 1.0
    said = list(lines)
    heard = segmenter.token_set("\n".join(said))
    stated = segmenter.token_set("\n".join(statements(line) for line in said))
    return len(tokens & heard) / len(tokens), len(tokens & stated) / len(tokens)


def ungrounded(fact: str, lines: Iterable[str]) -> bool:
    """Whether `fact` is no fact the lines state about someone: most of its words are in
    none of them, or next to none in what they state, or it speaks to the bot (a fact is
    written in the third person; a member's order copied as it was said is not)."""
    if addresses_the_bot(fact):
        return True
    heard, stated = grounded_shares(fact, lines)
    return heard < MIN_GROUNDED_SHARE or stated < MIN_STATED_SHARE
