"""What a search query asks for: its content terms (stopwords and function words dropped, both
languages) and the days it names ("昨天", "last week", "5月2日"), shared by chat-log and memory
search so that both read a question the same way."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

from . import segmenter
from .stopwords import STOP_CHARACTERS, is_recall_word, is_stopword

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# Each term is one more full-text phrase to match and score; a pasted paragraph as a query
# keeps its first terms, which are enough to find where it was said. Room for a question
# asked after a few sentences of context (the question comes last): at 32, MemDaily's
# "noisy" questions lost the words they ask about (R@10 55 against BM25's 73).
MAX_QUERY_TERMS = 64
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
# Dates written with their numbers, and with a month's name; a year-less one means its
# latest occurrence.
_DATES = (
    # 2023年5月2日, 5月2号
    re.compile(r"(?:(?P<year>\d{4})\s*年\s*)?(?P<month>\d{1,2})\s*月\s*(?P<day>\d{1,2})\s*[日号]"),
    # 2023-05-02, 2023/5/2, 2023.5.2
    re.compile(r"(?<!\d)(?P<year>\d{4})[-/.](?P<month>\d{1,2})[-/.](?P<day>\d{1,2})(?!\d)"),
    # may 2nd, may 2, may 2 2023
    re.compile(
        rf"\b(?P<month>{_MONTH})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b"
        r"(?:,?\s+(?P<year>\d{4}))?"
    ),
    # 2nd of may, 2 may 2023
    re.compile(
        rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_MONTH})\b"
        r"(?:,?\s+(?P<year>\d{4}))?"
    ),
)


@dataclass(frozen=True, slots=True)
class Period:
    """Local calendar days from `first` to `last`, both included. A date named without its
    year ("5月2日") is its latest occurrence not after today, `yearless`: a search may take
    an earlier year's instead (the latest one it has rows of)."""

    first: date
    last: date
    yearless: bool = False

    def years_back(self, years: int) -> Period | None:
        """The same days `years` earlier (None for a 29 February that year has not)."""
        try:
            first = self.first.replace(year=self.first.year - years)
            last = self.last.replace(year=self.last.year - years)
        except ValueError:
            return None
        return Period(first, last, self.yearless)

    def utc_bounds(self, zone: tzinfo) -> tuple[datetime, datetime]:
        """The period as an aware [start, end) pair: midnight to midnight in `zone`."""
        start = datetime.combine(self.first, time(), zone)
        end = datetime.combine(self.last + timedelta(days=1), time(), zone)
        return start, end


@dataclass(frozen=True, slots=True)
class Query:
    """A query as the searches use it: distinct content terms in the order asked, the
    periods it names (only when the search knows what day it is), and its function words
    (`weak_terms`: what a search may use to order its matches, never to find them)."""

    terms: tuple[str, ...]
    periods: tuple[Period, ...] = ()
    weak_terms: tuple[str, ...] = ()


# A relative date, the unit it counts in and how many units back. The words themselves are
# removed before terms are taken: "上个月" is a time, not something that was said.
_RELATIVE_DATES: tuple[tuple[re.Pattern[str], str, int], ...] = tuple(
    (re.compile(pattern), unit, offset)
    for pattern, unit, offset in (
        (r"\bthe day before yesterday\b|前天|前晚", "day", -2),
        (r"\byesterday\b|\blast night\b|昨天|昨日|昨晚|昨儿", "day", -1),
        (
            r"\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b|今天|今日|今晚|今早",
            "day",
            0,
        ),
        (r"\blast week\b|上周|上个?星期|上个?礼拜", "week", -1),
        (r"\bthis week\b|这周|本周|这个?星期|本星期|这个?礼拜", "week", 0),
        (r"\blast month\b|上个?月", "month", -1),
        (r"\bthis month\b|这个?月|本月", "month", 0),
    )
)


def analyse(text: str, today: date | None = None) -> Query:
    """The query in `text`. With `today` (the local date of the asker), the days it names
    become periods; without, they are only kept out of the terms."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    periods: list[Period] = []
    for pattern, unit, offset in _RELATIVE_DATES:
        if today is not None:
            periods.extend(_relative_period(unit, offset, today) for _ in pattern.finditer(folded))
        folded = pattern.sub(" ", folded)
    if today is not None:
        periods.extend(_absolute_periods(folded, today))
    # Cut once: both kinds of term come from the same words (a search runs on every turn).
    words = segmenter.words(folded)
    terms = _content_terms_of(folded, words)
    return Query(terms, tuple(dict.fromkeys(periods)), _weak_terms_of(words))


def query_terms(text: str) -> tuple[str, ...]:
    """The distinct content terms of `text`, normalised as the index is (at most
    MAX_QUERY_TERMS): stopwords, function words and bigrams of a function character dropped."""
    return _content_terms_of(text, segmenter.words(text))


def weak_query_terms(text: str) -> tuple[str, ...]:
    """The distinct function words of `text` (at most MAX_QUERY_TERMS), normalised as the
    index is; recall words ("记得", "remember") left out, they ask and never describe."""
    return _weak_terms_of(segmenter.words(text))


def _content_terms_of(text: str, words: list[str]) -> tuple[str, ...]:
    return tuple(itertools.islice(_content_terms(text, words), MAX_QUERY_TERMS))


def _weak_terms_of(words: list[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for word in words:
        term = segmenter.normalised(word)
        if (is_stopword(word) or is_stopword(term)) and not is_recall_word(term):
            seen.setdefault(term)
    return tuple(itertools.islice(seen, MAX_QUERY_TERMS))


def _content_terms(text: str, words: list[str]) -> Iterator[str]:
    stop_spans = _stopword_spans(text, words)
    seen: set[str] = set()
    for word in words:
        term = segmenter.normalised(word)
        if term in seen or is_stopword(word) or is_stopword(term) or _stop_bigram(word):
            continue
        if _only_inside(word, text, stop_spans):
            continue
        seen.add(term)
        yield term


def _stopword_spans(text: str, words: list[str]) -> list[tuple[int, int]]:
    """Where `text` holds its stopwords of two or more characters."""
    spans: list[tuple[int, int]] = []
    for word in {w for w in words if len(w) > 1 and is_stopword(w)}:
        start = text.find(word)
        while start >= 0:
            spans.append((start, start + len(word)))
            start = text.find(word, start + 1)
    return spans


def _only_inside(word: str, text: str, spans: list[tuple[int, int]]) -> bool:
    """Whether every occurrence of `word` in `text` is part of a longer stopword: the
    segmenter also cuts a word into its pieces ("来着" into "来", "着"), and a piece of a
    function word asks for nothing."""
    if not spans:
        return False
    start = text.find(word)
    if start < 0:
        return False
    while start >= 0:
        end = start + len(word)
        if not any(s <= start and end <= e and e - s > len(word) for s, e in spans):
            return False
        start = text.find(word, start + 1)
    return True


def _stop_bigram(word: str) -> bool:
    """A character bigram that is no dictionary word and holds a function character ("说的",
    "去了"): it only repeats its content character, a term of its own."""
    return (
        len(word) == 2
        and (word[0] in STOP_CHARACTERS or word[1] in STOP_CHARACTERS)
        and not segmenter.in_dictionary(word)
    )


def _relative_period(unit: str, offset: int, today: date) -> Period:
    if unit == "day":
        day = today + timedelta(days=offset)
        return Period(day, day)
    if unit == "week":
        # Weeks start on Monday (ISO 8601, and how Chinese calendars count 周).
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return Period(monday, monday + timedelta(days=6))
    first = today.replace(day=1)
    for _ in range(-offset):
        first = (first - timedelta(days=1)).replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    return Period(first, following - timedelta(days=1))


def _absolute_periods(text: str, today: date) -> Iterator[Period]:
    for pattern in _DATES:
        for found in pattern.finditer(text):
            month_text, year = found.group("month"), found.group("year")
            month = int(month_text) if month_text.isdigit() else _MONTHS[month_text]
            day = int(found.group("day"))
            named = (
                _valid_date(int(year), month, day)
                if year is not None
                else _latest_on_or_before(month, day, today)
            )
            if named is not None:
                yield Period(named, named, yearless=year is None)


def _latest_on_or_before(month: int, day: int, today: date) -> date | None:
    """A date named without its year: its latest occurrence not after today ("5月2日" asked in
    December is this year's; asked in January, last year's)."""
    this_year = _valid_date(today.year, month, day)
    if this_year is not None and this_year <= today:
        return this_year
    return _valid_date(today.year - 1, month, day) or this_year


def _valid_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def content_characters(text: str) -> list[str]:
    """The Chinese characters of `text`, function characters ("的", "了") left out, NFKC
    folded as the index folds its terms."""
    folded = unicodedata.normalize("NFKC", text)
    return [c for c in _HAN.findall(folded) if c not in STOP_CHARACTERS]
