"""Keyword ranking of memories: BM25F over each memory's content and tags, with the
Chinese characters of the query and the days it names as more evidence."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo

from ..text import Period, Query, content_characters
from ..text import query as query_module
from .index import TAG_WEIGHT, IndexedMemory

# BM25F (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
# 2009) over a memory's two fields. k1 and b are the textbook values (Lucene's defaults);
# a tag is a label someone chose for the memory, so a term in its tags counts twice
# (TAG_WEIGHT, index.py, which counts a tag's characters so too).
BM25_K1 = 1.2
BM25_B = 0.75
CONTENT_WEIGHT = 1.0
# What a function word of the query ("我", "the") weighs against a content word of the same
# idf. Measured on MemoryBank-SiliconFriend (bench/retrieval.py), recall@10 is flat from
# 0.05 to 0.5 and falls at 1 (function words then reorder real matches): the middle of it.
WEAK_TERM_WEIGHT = 0.2
# What a Chinese character of the query's content words weighs against a word. Measured on
# the same bench, recall@10 is the same from 0.1 to 0.3 and lower without: the middle.
CHARACTER_WEIGHT = 0.2
MIN_CHARACTERS_TO_FIND = 2


def keyword_ranking(
    query: str | Query,
    entries: Sequence[IndexedMemory],
    zone: tzinfo = timezone.utc,
    *,
    characters_find: bool = True,
) -> list[tuple[IndexedMemory, float]]:
    """Entries matching the query's terms or the days it names, best first, with their
    keyword score (> 0).

    The score is BM25F over content and tags, with idf and average lengths taken from
    `entries` (the scope's live memories): the sum, over the query's content terms (see
    `text.query`: stopwords and function words never find a memory) that the entry holds, of
    the term's idf times a saturating, length-normalised term frequency, about idf for one
    occurrence in a content of average length, at most (k1 + 1) x idf. idf is
    ln(1 + (N - df + 0.5) / (df + 0.5)) (always > 0). Three more kinds of evidence count:
    - a day the query names ("昨天", "5月2日"; only in a `Query` analysed with today's date)
      is one more term, held by the memories saved on it (in `zone`), so that "我5月2日说的
      那本书" finds what was said that day;
    - the Chinese characters of the query's content words, BM25 over the characters of each
      memory, weighted CHARACTER_WEIGHT: words and characters together retrieve Chinese
      better than either (Nie, Gao, Zhang & Zhou, "On the Use of Words and N-grams for
      Chinese Information Retrieval", IRAL 2000), so "糖醋鱼" finds "醋、糖……鱼块" (two
      characters in common needed to find); with `characters_find` False (auto-inject,
      where a wrong find costs more than a miss) they only order what words matched;
    - the query's function words, weighted WEAK_TERM_WEIGHT, order the entries the rest
      matched, but never match alone: a question of only function words finds nothing.
    So a score says how many, and how rare, of the query's words the memory shares; it grows
    with the query's length and is not a probability. Ties: newest first."""
    analysed = query_module.analyse(query) if isinstance(query, str) else query
    terms, weak_terms = frozenset(analysed.terms), frozenset(analysed.weak_terms)
    if not (terms or analysed.periods) or not entries:
        return []
    # What each entry shares with the query, worked out once for the statistics and scores.
    asked = terms | weak_terms
    held = [_shared_terms(entry, asked) for entry in entries]
    words = _WordStatistics.of(entries, asked, held)
    characters = _CharacterStatistics.of(entries, analysed.terms)
    days = _DayTerm.of(entries, analysed.periods, zone)
    scored = []
    for entry, shared, characters_shared in zip(entries, held, characters.held, strict=True):
        score = (words.score(entry, shared & terms) if shared else 0.0) + days.score(entry)
        if score or characters_find:
            finding = not score
            score += CHARACTER_WEIGHT * characters.score(entry, characters_shared, finding=finding)
        if score > 0:
            score += WEAK_TERM_WEIGHT * words.score(entry, shared & weak_terms)
            scored.append((entry, score))
    scored.sort(key=lambda pair: (pair[1], pair[0].record.updated_at), reverse=True)
    return scored


def held_terms(entries: Sequence[IndexedMemory], terms: frozenset[str]) -> list[frozenset[str]]:
    """What each of `entries` holds of `terms`, in their order."""
    return [_shared_terms(entry, terms) for entry in entries]


def word_idf(count: int, holding: int) -> float:
    """The idf of a word `holding` of `count` memories hold (as the ranking takes it)."""
    return _idf(count, holding)


def weighted_term_scores(
    entries: Sequence[IndexedMemory], weights: dict[str, float], held: Sequence[frozenset[str]]
) -> dict[str, float]:
    """By memory id, what the `weights` terms score in each entry holding any (BM25F, as
    the query's own words, each term's score times its weight), given what each entry
    holds of them or more (`held`, from `held_terms`)."""
    terms = frozenset(weights)
    held = [terms & shared for shared in held]
    words = _WordStatistics.of(entries, terms, held)
    return {
        entry.record.id: sum(weights[term] * words.score(entry, {term}) for term in shared)
        for entry, shared in zip(entries, held, strict=True)
        if shared
    }


def _shared_terms(entry: IndexedMemory, terms: frozenset[str]) -> frozenset[str]:
    """The terms of `terms` the entry's content or tags hold. (`terms.intersection(d)`
    looks each term up in the dict; `d.keys() & terms` would first copy every key.)"""
    shared = terms.intersection(entry.content_terms)
    if entry.tag_terms:
        shared |= terms.intersection(entry.tag_terms)
    return shared


def _idf(count: int, holding: int) -> float:
    return math.log(1 + (count - holding + 0.5) / (holding + 0.5))


def _saturated(weighted_frequency: float) -> float:
    return weighted_frequency * (BM25_K1 + 1) / (weighted_frequency + BM25_K1)


def _length_norm(length: int, average: float) -> float:
    return 1 - BM25_B + BM25_B * length / average


@dataclass(frozen=True, slots=True)
class _WordStatistics:
    """What BM25F needs from the collection: each query term's idf and each field's
    average length. Terms are matched by set intersection, so an entry costs what it shares
    with the query, not what the query holds."""

    idf: dict[str, float]
    average_content_terms: float
    average_tag_terms: float

    @classmethod
    def of(
        cls,
        entries: Sequence[IndexedMemory],
        terms: frozenset[str],
        held: Sequence[frozenset[str] | set[str]],
    ) -> _WordStatistics:
        """The statistics of `terms` over `entries`, given what each entry holds of them."""
        count = len(entries)
        holding = Counter(itertools.chain.from_iterable(held))
        idf = {term: _idf(count, holding[term]) for term in terms}
        content_total = sum(entry.content_length for entry in entries)
        tag_total = sum(entry.tag_length for entry in entries)
        # A field empty in every entry has no length to normalise by: 1 keeps it neutral.
        return cls(idf, max(1.0, content_total / count), max(1.0, tag_total / count))

    def score(self, entry: IndexedMemory, shared: frozenset[str] | set[str]) -> float:
        """BM25F of the query terms the entry holds (`shared`, from `_shared_terms`)."""
        if not shared:
            return 0.0
        content, tags = entry.content_terms, entry.tag_terms
        content_norm = _length_norm(entry.content_length, self.average_content_terms)
        tag_norm = _length_norm(entry.tag_length, self.average_tag_terms)
        return sum(
            self.idf[term]
            * _saturated(
                CONTENT_WEIGHT * content.get(term, 0) / content_norm
                + TAG_WEIGHT * tags.get(term, 0) / tag_norm
            )
            for term in shared
        )


@dataclass(frozen=True, slots=True)
class _CharacterStatistics:
    """BM25 over the Chinese characters of memories: each query character's idf, the
    average count of characters, and the query characters each entry holds (in the
    entries' order). Found by intersecting each entry's characters with the query's once:
    a long question has a hundred characters, a memory a few dozen."""

    idf: dict[str, float]
    average_characters: float
    held: list[frozenset[str]]

    @classmethod
    def of(cls, entries: Sequence[IndexedMemory], terms: Sequence[str]) -> _CharacterStatistics:
        characters = frozenset(content_characters("".join(terms)))
        if not characters:
            return cls({}, 1.0, [frozenset()] * len(entries))
        held = [characters.intersection(entry.characters) for entry in entries]
        holding = Counter(itertools.chain.from_iterable(held))
        count = len(entries)
        total = sum(entry.characters_length for entry in entries)
        idf = {character: _idf(count, holding[character]) for character in characters}
        return cls(idf, max(1.0, total / count), held)

    def score(self, entry: IndexedMemory, shared: frozenset[str], *, finding: bool) -> float:
        """The entry's character score, given the query characters it holds (`shared`,
        from `held`). `finding` (nothing else matched it): 0 unless it shares
        MIN_CHARACTERS_TO_FIND of the query's characters, so that one character in common
        ("宠物" for "量子物理") never finds a memory."""
        if not shared or (finding and len(shared) < MIN_CHARACTERS_TO_FIND):
            return 0.0
        counts = entry.characters
        norm = _length_norm(entry.characters_length, self.average_characters)
        return sum(self.idf[c] * _saturated(counts[c] / norm) for c in shared)


@dataclass(frozen=True, slots=True)
class _DayTerm:
    """The days a query names as one term: the ids of the entries saved on one of them, and
    its idf among all entries."""

    holders: frozenset[str]
    idf: float

    @classmethod
    def of(
        cls, entries: Sequence[IndexedMemory], periods: Sequence[Period], zone: tzinfo
    ) -> _DayTerm:
        if not periods:
            return cls(frozenset(), 0.0)
        holders = frozenset(
            entry.record.id for entry in entries if _saved_within(entry.saved_at, periods, zone)
        )
        return cls(holders, _idf(len(entries), len(holders)))

    def score(self, entry: IndexedMemory) -> float:
        return self.idf if entry.record.id in self.holders else 0.0


def _saved_within(saved_at: datetime | None, periods: Sequence[Period], zone: tzinfo) -> bool:
    """Whether the memory was saved on a day of `periods`, a year-less date (always one day)
    matching that day of any year (a memory has no "latest year with rows" to pick)."""
    if saved_at is None:
        return False
    day = saved_at.astimezone(zone).date()
    for period in periods:
        if period.first <= day <= period.last:
            return True
        if period.yearless and (day.month, day.day) == (period.first.month, period.first.day):
            return True
    return False
