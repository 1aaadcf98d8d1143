"""The read side of memories: what a view shows, and search over one or several views ranked
together: the keyword ranking (keywords.py; the model's searches add their best memories'
words, feedback.py), fused by score with the vector ranking when embeddings are configured
(see text/fusion.py), and the floor of auto-inject (relevance.py)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, tzinfo

from ..store import MemoryRecord, utc_text
from ..text import NAMED_PERSON, Query, fuse_rankings
from ..text import query as query_module
from .feedback import with_feedback
from .index import IndexedMemory, ScopeIndex
from .keywords import keyword_ranking
from .personal import MemoryView
from .relevance import RelevanceFloor
from .vectors import MemoryVectors, vector_ranking

# The least share of a message's keyword weight one shared character must carry alone.
LEAST_CHARACTER_COVERAGE = 0.25


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A search result with its relevance score; `personal` when it is a person's memory
    (found through a personal view), not the chat's."""

    memory: MemoryRecord
    score: float
    personal: bool = False


async def visible(index: ScopeIndex, view: MemoryView) -> list[IndexedMemory]:
    """The live entries of the view's scope that it shows."""
    return [e for e in (await index.get(view.scope)).live() if view.shows(e.record)]


async def pooled(
    index: ScopeIndex, views: Sequence[MemoryView]
) -> tuple[list[IndexedMemory], set[str]]:
    """The live entries the views show, as one collection, and the ids of those seen
    through a personal view. Ids of the two kinds differ (see rules.new_id); should a
    row written otherwise repeat one, the first view's entry is the one kept."""
    entries: dict[str, IndexedMemory] = {}
    personal: set[str] = set()
    for view in views:
        for entry in await visible(index, view):
            if entry.record.id in entries:
                continue
            entries[entry.record.id] = entry
            if view.personal:
                personal.add(entry.record.id)
    return list(entries.values()), personal


async def search_views(
    index: ScopeIndex,
    vectors: MemoryVectors,
    views: Sequence[MemoryView],
    query: str | None,
    limit: int,
    *,
    safe_only: bool,
    zone: tzinfo,
    clock: Callable[[], datetime],
    feedback: bool = False,
) -> list[SearchHit]:
    """What the views show for `query`, ranked together (newest first without a query);
    the days a query names are counted in `zone` from `clock`'s now. With `feedback` (the
    model's search), the best memories' words are added to the query (feedback.py)."""
    live, personal = await pooled(index, views)
    # The guard runs only on entries about to be returned (and once per entry).
    if not query or not query.strip():
        live.sort(key=lambda e: (e.record.updated_at, e.record.id), reverse=True)
        shown = (e for e in live if not safe_only or e.safe)
        return [
            SearchHit(e.record, 0.0, e.record.id in personal)
            for e in itertools.islice(shown, limit)
        ]
    if not live:
        return []  # the common case of a new chat: no tokenising, no embedding call
    today = clock().astimezone(zone).date()
    ranking = await rank(query, live, vectors, zone, today=today, feedback=feedback)
    return best_shown(ranking.fused, limit, safe_only=safe_only, personal=personal)


async def relevant_views(
    index: ScopeIndex,
    vectors: MemoryVectors,
    views: Sequence[MemoryView],
    text: str,
    top_k: int,
    *,
    zone: tzinfo,
) -> list[SearchHit]:
    """The memories the views show most relevant to `text`, safe to show the model and
    above the relevance floor (see relevance.py), at most `top_k` in all."""
    if not text.strip():
        return []
    live, personal = await pooled(index, views)
    if not live:
        return []
    # A message names days to talk about them ("今天好冷"), not to recall them, and shares
    # a character or two with many an unrelated memory: only words find what it injects.
    ranking = await rank(text, live, vectors, zone, today=None)
    unrelated = None
    if ranking.similarity:
        unrelated = await vectors.unrelated_similarity(ranking.query_vector)
    coverage = sharing_a_word(ranking)
    floor = RelevanceFloor.of(coverage, unrelated)
    passing = [
        (entry, score)
        for entry, score in ranking.fused
        if floor.admits(entry.record.id, ranking.similarity.get(entry.record.id))
    ]
    return best_shown(passing, top_k, safe_only=True, personal=personal)


def sharing_a_word(ranking: Ranking) -> dict[str, float]:
    """The coverage of the keyword matches that share a word with the message: a word of
    two characters or more (a digit or a Latin letter is one), or a character the note
    holds outside the people it names that carries a real part of the message. jieba
    leaves an unknown word (a name) as single characters beside their bigrams, so "小明" is
    indexed with "小", and "我女儿小名叫什么来着" (cut 小 / 名叫) matched every note naming
    小明(20001) by that "小" alone; a 1.5B model answered it with the cat's name. A verb of
    one character is a word all the same: "我在学什么乐器来着？" shares only "学" (coverage
    0.31) with "Lily(20003)说：我在学尤克里里". Offline as relevance.py's floor was, a
    character alone needing coverage 0.2, 0.25 or 0.3 left MemDaily as leaving every
    character out did (evidence injected 92.9 %, other memories per question 0.44, another
    chat's question injecting anything 40 %), where counting every character gave 93.3 %,
    0.49 and 46 %; MemoryBank cn and en the same either way."""
    words = [term for term in ranking.terms if len(term) > 1 or term.isascii()]
    characters = [term for term in ranking.terms if len(term) == 1 and not term.isascii()]
    shared: dict[str, float] = {}
    for entry, _ in ranking.fused:
        coverage = ranking.coverage.get(entry.record.id)
        if coverage is None:
            continue
        if _holds_any(entry, words) or (
            coverage >= LEAST_CHARACTER_COVERAGE and _holds_outside_names(entry, characters)
        ):
            shared[entry.record.id] = coverage
    return shared


def _holds_any(entry: IndexedMemory, terms: Sequence[str]) -> bool:
    return any(term in entry.content_terms or term in entry.tag_terms for term in terms)


def _holds_outside_names(entry: IndexedMemory, characters: Sequence[str]) -> bool:
    """Whether the note holds one of `characters` in its tags or its words, names aside."""
    if any(c in entry.tag_terms for c in characters):
        return True
    held = [c for c in characters if c in entry.content_terms]
    if not held:
        return False
    outside_names = NAMED_PERSON.sub(" ", entry.record.content).casefold()
    return any(c in outside_names for c in held)


@dataclass(frozen=True, slots=True)
class Ranking:
    """One query's ranking of a scope (best first), and by memory id: each keyword match's
    coverage (see text/fusion.py) and each cosine (memories with a vector of the query's
    model only); `terms`: the query's content terms, as the keyword ranking read them."""

    fused: list[tuple[IndexedMemory, float]]
    coverage: dict[str, float]
    similarity: dict[str, float]
    query_vector: list[float]
    terms: tuple[str, ...] = ()


async def rank(
    query: str,
    live: Sequence[IndexedMemory],
    vectors: MemoryVectors,
    zone: tzinfo,
    *,
    today: date | None,
    feedback: bool = False,
) -> Ranking:
    """The live entries ranked for `query`: by keyword alone while there is no query
    vector, else the keyword and vector rankings fused. With `today` (a search, not a
    message read for auto-inject): the days the query names match the memories saved
    on them, and characters shared with a query word find memories too."""
    searching = today is not None
    analysed = query_module.analyse(query, today)
    query_vector = await vectors.embed_quietly(query, "query")
    if query_vector is None and searching:
        # A search ranks by keyword alone as it always has: no coverage to weigh.
        keyword = keyword_ranking(analysed, live, zone, characters_find=True)
        if feedback:
            keyword = with_feedback(analysed.terms, keyword, live)
        return Ranking(keyword, {entry.record.id: 1.0 for entry, _ in keyword}, {}, [])
    keyword, coverage = keyword_ranking_with_coverage(
        query, analysed, live, zone, characters_find=searching, feedback=feedback
    )
    if query_vector is None:
        # auto-inject's floor weighs the coverage
        return Ranking(keyword, coverage, {}, [], tuple(analysed.terms))
    vector = vector_ranking(query_vector, live)
    by_id = {entry.record.id: entry for entry in live}
    fused = fuse_rankings(
        [(entry.record.id, score) for entry, score in keyword],
        [(entry.record.id, similarity) for entry, similarity in vector],
        coverage,
    )
    return Ranking(
        fused=[(by_id[memory_id], score) for memory_id, score in fused],
        coverage=coverage,
        similarity={entry.record.id: similarity for entry, similarity in vector},
        query_vector=query_vector,
        terms=tuple(analysed.terms),
    )


def keyword_ranking_with_coverage(
    text: str,
    query: Query,
    live: Sequence[IndexedMemory],
    zone: tzinfo,
    *,
    characters_find: bool,
    feedback: bool = False,
) -> tuple[list[tuple[IndexedMemory, float]], dict[str, float]]:
    """The keyword ranking (with `feedback`, the best memories' words added: feedback.py),
    and each match's coverage: its score over the score of the query itself ranked as one
    more text of the scope, saved on the first day it names (the most a memory can match
    it; tags weigh more, so a tag match may reach it: capped at 1)."""
    saved = ""
    if query.periods:
        noon = datetime.combine(query.periods[0].first, time(12), zone)
        saved = utc_text(noon)
    probe = IndexedMemory.of(MemoryRecord(id="", content=text, normalized="", created_at=saved))
    ranked = keyword_ranking(query, [*live, probe], zone, characters_find=characters_find)
    most = next((score for entry, score in ranked if entry is probe), 0.0)
    keyword = [(entry, score) for entry, score in ranked if entry is not probe]
    if feedback:
        keyword = with_feedback(query.terms, keyword, live)
    coverage = {
        entry.record.id: min(1.0, score / most) if most > 0 else 1.0 for entry, score in keyword
    }
    return keyword, coverage


def best_shown(
    ranked: Sequence[tuple[IndexedMemory, float]],
    limit: int,
    *,
    safe_only: bool,
    personal: Container[str] = (),
) -> list[SearchHit]:
    """The first `limit` of a best-first ranking, without unsafe entries if `safe_only`
    (checked only as far down as needed); hits whose id is in `personal` marked so."""
    shown = (
        SearchHit(entry.record, score, entry.record.id in personal)
        for entry, score in ranked
        if not safe_only or entry.safe
    )
    return list(itertools.islice(shown, limit))
