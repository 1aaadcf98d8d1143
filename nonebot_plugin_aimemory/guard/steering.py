"""Finding steering in folded text (lower case, ASCII punctuation, see `normalise.py`): the
four shapes of every language (`steering_shapes.py`) and forged turns
(`steering_turns.py`), each rule tried only where one of its start words stands.

The start words of all rules are found first (Latin ones word by word, the others by one
pattern, a trie: `literals.py`), and only the rules a start word may start are tried where
it stands. Every pattern is linear: it starts with literal words, its gaps are bounded, and
whether a match counts is decided by a look at the text before it
(`steering_contexts.py`)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from .lexicon import lexicons
from .literals import trie_pattern
from .steering_rules import Rule
from .steering_shapes import shape_rules
from .steering_turns import forged_turn_rules

_LATIN_WORD = re.compile(b"[a-z]+")
_LOWER_A, _LOWER_Z = ord("a"), ord("z")
# More places of one start word than this: a flood, scanned by the regex engine instead.
_TRIED_IN_PLACE_AT_MOST = 256
# A Latin start word this short ("a" of "a partir", "t" of "t'es") stands only as a whole
# word (else "a" would stop at every letter a).
_WHOLE_WORD_CHARS = 2
# Latin words whose start words are remembered; a flood of new words empties it now and then.
_LATIN_WORDS_KEPT = 8192


class Found(NamedTuple):
    """A steering match and the rule it matched."""

    rule: Rule
    match: re.Match[str]


def steering_rules() -> tuple[Rule, ...]:
    """Every rule, in the order they are tried: forged turns, then each language's shapes."""
    return _index().rules


def rules_are_built() -> bool:
    """Whether the rules were compiled (the first search compiles them: some 0.5 s)."""
    return _index.cache_info().currsize > 0


def find_steering(folded: str, blanks: frozenset[int] = frozenset()) -> Found | None:
    """A match of a steering rule in `folded` that counts, or None; `blanks` are the
    positions where a blank between Chinese characters was removed."""
    index = _index()
    for word, starts in index.start_places(folded).items():
        if len(starts) > _TRIED_IN_PLACE_AT_MOST:
            # A flood of one word: let the regex engine scan for the rules instead.
            for rule in index.rules_at[word]:
                if (match := rule.search(folded, blanks)) is not None:
                    return Found(rule, match)
            continue
        rules = index.rules_at[word]
        for at in starts:
            for rule in rules:
                # The pattern first: most tries fail there, and the context costs more.
                match = rule.pattern.match(folded, at)
                if match is not None and rule.context(folded, at, at in blanks):
                    return Found(rule, match)
    return None


@dataclass(frozen=True, eq=False)
class _Index:
    """Every rule, its start words, and the rules each start word may start: its own and
    those of the shorter start words it begins with ("ignore" starts the rules of "ignor"
    too, since both stand where it stands). Latin start words are found word by word (a
    word of three letters or more as the start of a longer one, a shorter one whole,
    one with a blank or a mark, "a partir", "t'es", "role-play", as written); the others
    (Chinese, kana, Hangul, Cyrillic, brackets), anywhere, by one pattern."""

    rules: tuple[Rule, ...]
    rules_at: dict[str, tuple[Rule, ...]]
    latin_lengths: tuple[int, ...]
    phrases: dict[bytes, tuple[bytes, ...]]  # by their first run of letters
    others: re.Pattern[str]
    other_firsts: frozenset[str]
    # Latin words seen -> `_latin_start_of` them (bounded: cleared when full).
    latin_words: dict[bytes, tuple[str | None, tuple[bytes, ...]]] = field(default_factory=dict)

    def start_places(self, folded: str) -> dict[str, list[int]]:
        """Where each start word stands in `folded`, the longest at each place."""
        places: dict[str, list[int]] = {}
        others, match_other = self.others.finditer, self.others.match
        for hit in others(folded):
            start = hit.start()
            word = hit.group(0)
            places.setdefault(word, []).append(start)
            # One may start inside another ("以上面": "上面"); finditer does not overlap.
            for offset in _inner_starts(self, word):
                if overlapping := match_other(folded, start + offset):
                    places.setdefault(overlapping.group(0), []).append(start + offset)
        # Word by word, in bytes (one per character: a text holding Chinese would cost a
        # conversion per search). With invisible characters dropped, "ignore\u200bprevious"
        # is one word: a start word may begin a word longer than itself.
        latin = folded.encode("ascii", "replace")
        phrases: set[bytes] = set()
        known = self.latin_words
        for hit in _LATIN_WORD.finditer(latin):
            word = hit.group(0)
            found = known.get(word)
            if found is None:
                if len(known) >= _LATIN_WORDS_KEPT:
                    known.clear()
                found = known[word] = _latin_start_of(self, word)
            key, after = found
            if key is not None:
                places.setdefault(key, []).append(hit.start())
            if after:
                phrases.update(after)
        for phrase in phrases:  # "a partir", "t'es": found as written
            if starts := _word_starts(latin, phrase, whole=False):
                places[phrase.decode()] = starts
        return places


def _latin_start_of(index: _Index, word: bytes) -> tuple[str | None, tuple[bytes, ...]]:
    """The longest start word a Latin word begins with (one of one or two letters only if
    it is the whole word), and the start words with a blank or a mark it may begin."""
    text = word.decode()
    key = text if len(text) <= _WHOLE_WORD_CHARS and text in index.rules_at else None
    for length in index.latin_lengths:
        if length <= len(text) and text[:length] in index.rules_at:
            key = text[:length]
    return key, index.phrases.get(word, ())


@functools.lru_cache(maxsize=4096)
def _inner_starts(index: _Index, word: str) -> tuple[int, ...]:
    """Offsets inside a found start word where another one may begin."""
    return tuple(offset for offset in range(1, len(word)) if word[offset] in index.other_firsts)


def _word_starts(latin: bytes, key: bytes, *, whole: bool) -> list[int]:
    """Where `key` stands at a word start (and, if `whole`, ends at a word end)."""
    starts: list[int] = []
    at = latin.find(key)
    while at >= 0:
        after = at + len(key)
        if (at == 0 or not _LOWER_A <= latin[at - 1] <= _LOWER_Z) and not (
            whole and after < len(latin) and _LOWER_A <= latin[after] <= _LOWER_Z
        ):
            starts.append(at)
        at = latin.find(key, after if whole else at + 1)
    return starts


@functools.cache
def _index() -> _Index:
    """The rules and their start words, built on first use (every language's word classes
    are folded and compiled: some 0.5 s)."""
    rules = tuple(forged_turn_rules()) + tuple(
        rule for lexicon in lexicons() for rule in shape_rules(lexicon)
    )
    own: dict[str, list[Rule]] = {}
    for rule in rules:
        for word in rule.starts:
            if rule not in own.setdefault(word, []):
                own[word].append(rule)
    order = {id(rule): position for position, rule in enumerate(rules)}
    rules_at = {
        word: tuple(
            sorted(
                {
                    id(rule): rule for prefix in _prefixes(word, own) for rule in own[prefix]
                }.values(),
                key=lambda rule: order[id(rule)],
            )
        )
        for word in own
    }
    latin = {word for word in own if word.isascii() and "a" <= word[0] <= "z"}
    phrases: dict[bytes, list[bytes]] = {}
    for word in latin:
        if not word.isalpha():
            first = _LATIN_WORD.match(word.encode())
            if first is not None:
                phrases.setdefault(first.group(0), []).append(word.encode())
    return _Index(
        rules,
        rules_at,
        tuple(
            sorted(
                {len(word) for word in latin if word.isalpha() and len(word) > _WHOLE_WORD_CHARS}
            )
        ),
        {first: tuple(sorted(found, key=len, reverse=True)) for first, found in phrases.items()},
        re.compile(trie_pattern(set(own) - latin)),
        frozenset(word[0] for word in set(own) - latin),
    )


def _prefixes(word: str, words: dict[str, list[Rule]]) -> list[str]:
    """The start words `word` begins with, itself included."""
    return [word[:length] for length in range(1, len(word) + 1) if word[:length] in words]
