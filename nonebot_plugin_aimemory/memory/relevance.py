"""The relevance floor of auto-inject: a memory goes before a message only on evidence that
it is about the message, never because it is the best of a bad lot.

Evidence is a keyword match (the keyword ranking holds only memories sharing a query term
that is not a stopword) or a vector closer to the message than any of a few everyday
sentences is. When vectors can judge, a keyword match covering less than half of the
message's keyword weight (one common word of a long message) needs their agreement too.

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


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """What a memory must show to be injected. `coverage`: the keyword matches, by memory
    id, with the share of the message's keyword weight each matches (1.0 when unknown);
    `unrelated_similarity`: the bar a cosine must beat (None: vectors cannot judge)."""

    coverage: Mapping[str, float]
    unrelated_similarity: float | None

    def admits(self, memory_id: str, similarity: float | None) -> bool:
        """Whether the memory (its cosine to the message, None without a vector) passes."""
        bar = self.unrelated_similarity
        if bar is None or similarity is None:
            return memory_id in self.coverage
        return similarity > bar or self.coverage.get(memory_id, 0.0) >= MAJORITY_COVERAGE
