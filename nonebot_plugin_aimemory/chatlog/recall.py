"""Recall: the chat-log lines that answer an addressed message go before it, for that turn
only, beside the memories (issue #36). A small model rarely calls `search_current_chat`:
what was said earlier in the chat, or folded out of the window, reaches it only if it is
put in front of it, as the memories are.

A line is recalled only on evidence, never because it is the best of a bad lot: it holds
at least half of the message's keyword weight (the memories' floor, memory/relevance.py),
each term weighing log(1 + N/n) for the n of the session's rows that hold it (the message
counted), so a common
word counts little and a name or a rare word much; the speaker's name counts, as the index
holds it. The weight is smoothed rather than bm25()'s, which is zero for a term half of a
young chat's rows hold. Lines the model reads anyway (the message, the window), the bot's
own lines (a small model copies its earlier answers' shape) and lines the model service
refused are left out. Keywords only: a recall waits for no embedding server; the search
tool also finds by meaning."""

from __future__ import annotations

import functools
import logging
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import tzinfo

from .. import prompts
from ..memory import speaks_in_first_person
from ..store import ChatRow, KeywordRanking
from ..text import cut_first, fit_lines, segmenter
from .lines import format_row
from .writer import ChatLog

logger = logging.getLogger("nonebot_plugin_aimemory")

# The share of the message's keyword weight a line must hold (see the docstring).
MAJORITY_COVERAGE = 0.5
# How many of the best keyword matches are read to find the lines to show.
CANDIDATE_ROWS = 20
# Folded candidate lines kept for the next turns: a dozen turns of candidates, a few
# dozen KiB of chat lines.
FOLDED_ROWS_CACHED = 256


class RecalledLines:
    """Finds, in one session's log, up to `rows` lines answering a message, within
    `max_chars`, and frames them as quoted data."""

    def __init__(self, chat_log: ChatLog, zone: tzinfo, *, rows: int, max_chars: int) -> None:
        self.chat_log = chat_log
        self.zone = zone
        self.rows = rows
        self.max_chars = max_chars

    async def block(
        self, session_key: str, query: str, seen: Sequence[str], *, asker: str = ""
    ) -> str:
        """The quoted block of lines (best evidence first), or '' when none has it;
        a line one of the `seen` texts holds (the message, the window's messages) is not
        repeated: looked for only in the lines that have the evidence. A message in the
        first person asks about its `asker` (the name they go by), as their lines are."""
        if self.rows < 1 or not query.strip():
            return ""
        query = asked_about(query, asker)
        try:
            rows = await self._evidenced_rows(session_key, query, seen)
        except Exception:
            # Recall helps; it must never stop an answer (database gone, disk full...).
            logger.exception("could not recall chat lines in %s; answering without", session_key)
            return ""
        lines = [format_row(row, self.zone) for row in rows]
        budget = self.max_chars - len(prompts.CHAT_LOG_RECALL_OPENING) - 1
        fitted = fit_lines(lines, budget, skip_misfits=True, shorten=cut_first)
        if not fitted.lines:
            return ""
        return "\n".join([prompts.CHAT_LOG_RECALL_OPENING, *fitted.lines])

    async def _evidenced_rows(
        self, session_key: str, query: str, seen: Sequence[str]
    ) -> list[ChatRow]:
        """The rows with the evidence, those holding more of the message's weight first,
        then the newer: a small model answers from the first line it reads (a 1.5B model
        read another member's trip before the asker's own), and a later statement stands
        over an earlier one."""
        # Not flushed first, so a turn costs no write: a line said within the last flush
        # interval (a second by default) is not recalled, being just above the question.
        # One call on the database reads the ranking, its rows and the log's span.
        ranked = await self.chat_log.store.ranked_rows(session_key, query, CANDIDATE_ROWS)
        if not ranked.ranking.scored:
            return []
        evidence = _Evidence(_term_weights(ranked.ranking, ranked.logged_rows))
        found: list[tuple[float, ChatRow]] = []
        for row in ranked.rows:
            if not _recallable(row, session_key) or _in(row, seen):
                continue
            held = evidence.share_held_by(row)
            if held >= MAJORITY_COVERAGE:
                found.append((held, row))
            if len(found) == self.rows:
                break
        found.sort(key=lambda pair: (pair[0], pair[1].id), reverse=True)
        return [row for _, row in found]


def _term_weights(ranking: KeywordRanking, logged_rows: int) -> dict[str, float]:
    """Each of the message's terms weighed by how few of the session's rows hold it."""
    # The terms and their row counts as the ranking read them: no second look-up.
    counts = ranking.term_counts
    logged = max([logged_rows, *counts.values()])
    # The message counts as one more row holding its terms (it may not be written yet):
    # a word no earlier line holds weighs most, and no line can match it.
    return {term: math.log1p((logged + 1) / (counts.get(term, 0) + 1)) for term in ranking.terms}


class _Evidence:
    """The message's keyword weights, each term's test made once for all the candidates."""

    def __init__(self, weights: dict[str, float]) -> None:
        self.total = sum(weights.values())
        # Summed in the weights' order, as the verdict was always summed.
        self.terms = [(weight, _test_of(term)) for term, weight in weights.items()]

    def share_held_by(self, row: ChatRow) -> float:
        """The share of the keyword weight the row (its speaker's name included) holds.
        A term is looked for in the row's folded text, as the index folds it: the same
        verdict as cutting the row into terms (a term is a word, a stem or two adjacent
        characters) without segmenting each candidate (about 0.2 ms a row)."""
        if self.total <= 0:
            return 0.0
        speaker = row.speaker_name if row.role != "assistant" and row.speaker_name else ""
        folded = _folded(f"{speaker}\n{row.text}")
        held = sum(weight for weight, holds in self.terms if holds(folded))
        return held / self.total


@functools.lru_cache(maxsize=FOLDED_ROWS_CACHED)
def _folded(text: str) -> str:
    """`text` folded as the index folds it: NFKC takes ~8 us a line, and the lines that
    match a chat's words come up again turn after turn."""
    return unicodedata.normalize("NFKC", text).casefold()


def _test_of(term: str) -> Callable[[str], bool]:
    """The test of whether a folded text holds `term`: a Latin word or stem at the start of
    a word ("go" in "going", not in "ago"), anything else anywhere (Chinese has no spaces)."""
    if term.isascii() and term.isalnum():
        starts_a_word = re.compile(rf"\b{re.escape(term)}").search
        # A normal form is not always a word's beginning ("lily" -> "lili").
        return lambda folded: starts_a_word(folded) is not None or term in _latin_forms(folded)
    return lambda folded: term in folded


_LATIN_WORD = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=FOLDED_ROWS_CACHED)
def _latin_forms(folded: str) -> frozenset[str]:
    """The normal forms of `folded`'s Latin words, read once a line, as it is folded."""
    return frozenset(segmenter.normalised(word) for word in _LATIN_WORD.findall(folded))


def asked_about(query: str, asker: str) -> str:
    """`query` with its asker's name when it speaks in the first person: "我女儿小名叫
    什么来着？" asks about the line "我女儿果果今天…" its asker said, which the index holds
    with their name, and a name is what "我" stands for. Their name counts as a term like
    any other: it weighs little where they say much, and alone it recalls nothing of
    substance (a line must hold half the weight)."""
    if not asker.strip() or not speaks_in_first_person(query):
        return query
    return f"{asker}\n{query}"


def _in(row: ChatRow, seen: Sequence[str]) -> bool:
    return any(row.text in text for text in seen)


def _recallable(row: ChatRow, session_key: str) -> bool:
    return row.session_key == session_key and row.role == "user" and not row.refused


class NoRecall:
    """Recall off, or no chat log: nothing goes before a message."""

    async def block(
        self, session_key: str, query: str, seen: Sequence[str], *, asker: str = ""
    ) -> str:
        """Nothing recalled."""
        return ""
