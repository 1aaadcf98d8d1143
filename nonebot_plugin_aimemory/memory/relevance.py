"""The relevance floor of auto-inject: a memory goes before a message only on evidence that
it is about the message, never because it is the best of a bad lot.

Evidence is a keyword match (the keyword ranking holds only memories sharing a query term
that is not a stopword) or a vector closer to the message than any of a few everyday
sentences is. When vectors can judge, a keyword match covering less than half of the
message's keyword weight (one common word of a long message) needs their agreement too;
when they cannot, it needs a tenth of that weight and a third of the best match's.

Why everyday sentences rather than a cosine threshold: an absolute floor would suit one
model only. e5 models put almost any two texts at 0.7-0.9, OpenAI's at 0.1-0.6, and one
model puts two short Chinese lines closer than two English ones. The everyday sentences
measure, for this model and this very message, how similar "unrelated" looks; a memory must
beat that. Measured with multilingual-e5-small on MemoryBank's questions, 92 % of the
memories that answer them beat it; of 14 chit-chat lines put to 12 stored facts, one
("明天几点上班") got a memory past it (the weekly meeting time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Everyday chat about nothing a memory would hold, in both languages the bot hears:
# greetings, thanks, meals, weather, good night, a vague question.
UNRELATED_SENTENCES = (
    "你好",
    "哈哈哈",
    "好的，谢谢",
    "今天天气不错",
    "我去吃饭了",
    "晚安",
    "这个怎么弄？",
    "大家好",
    "Hello!",
    "OK, thanks.",
    "Nice weather today.",
    "I'm going to have lunch.",
    "Good night.",
    "How do I do this?",
    "lol",
    "See you tomorrow.",
)


# A keyword match alone is evidence while its coverage (see text/fusion.py) is at least half: it
# holds most of the message's keyword weight (a memory holding every term covers 1 when as
# short as the message, about half when several times longer: BM25's length
# normalisation). Less (a name or a common word among many) needs the vectors' agreement.
MAJORITY_COVERAGE = 0.5


# Without vectors to agree, a keyword match is evidence while it holds a tenth of the
# message's keyword weight and a third of what the best match holds: what shares only a
# stray piece of the message ("小" of a mis-cut "小名" against a note naming 小明) or far
# less of it than another memory does stays out. Measured before it was built, auto-inject's
# top 3 over each question's own memories and over another chat's (offline, no vectors):
# MemDaily 240 questions, evidence injected 97.1 -> 93.3 %, other memories per question
# 0.95 -> 0.49, another chat's question injecting anything 66 -> 46 %; MemoryBank cn
# 75 -> 71 %, 1.90 -> 1.46, 86 -> 75 %; en 70.7 -> 69.7 %, 1.98 -> 1.73, 90 -> 88 %.
# A small model copies a note that is not about the question (a 1.5B model answered "豆包",
# the cat, to "我女儿小名叫什么来着？"); the search tool still finds what this leaves out.
LEAST_COVERAGE = 0.1
LEAST_SHARE_OF_BEST = 1 / 3


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """What a memory must show to be injected. `coverage`: the keyword matches, by memory
    id, with the share of the message's keyword weight each matches (see text/fusion.py);
    `unrelated_similarity`: the bar a cosine must beat (None: vectors cannot judge);
    `keyword_floor`: the coverage a keyword match needs when no vector can agree."""

    coverage: Mapping[str, float]
    unrelated_similarity: float | None
    keyword_floor: float

    @classmethod
    def of(
        cls, coverage: Mapping[str, float], unrelated_similarity: float | None
    ) -> RelevanceFloor:
        """The floor for one message's keyword matches and vectors' bar."""
        best = max(coverage.values(), default=0.0)
        floor = max(LEAST_COVERAGE, LEAST_SHARE_OF_BEST * best)
        return cls(coverage, unrelated_similarity, floor)

    def admits(self, memory_id: str, similarity: float | None) -> bool:
        """Whether the memory (its cosine to the message, None without a vector) passes."""
        bar = self.unrelated_similarity
        coverage = self.coverage.get(memory_id, 0.0)
        if bar is None or similarity is None:
            return coverage >= self.keyword_floor
        return similarity > bar or coverage >= MAJORITY_COVERAGE
