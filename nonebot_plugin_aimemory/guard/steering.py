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
from dataclasses import dataclass
from typing import NamedTuple

from .lexicon import lexicons
from .literals import trie_pattern
from .steering_rules import Rule
from .steering_shapes import shape_rules
from .steering_turns import forged_turn_rules

# More places of one start word than this: a flood, scanned by the regex engine instead.
_TRIED_IN_PLACE_AT_MOST = 256
# A Latin start word this short ("u" of "u r", "ab" of "ab jetzt") stands only as a whole
# word (else "a" would stop at every letter a).
_WHOLE_WORD_CHARS = 2


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
    too, since both stand where it stands). Latin start words are found at word starts by
    one pattern (a word of three letters or more as the start of a longer one, a shorter
    one whole, one with a blank or a mark, "ab jetzt", "role-play", as written); the
    others (Chinese, kana, Hangul, brackets), anywhere, by another."""

    rules: tuple[Rule, ...]
    rules_at: dict[str, tuple[Rule, ...]]
    latin: re.Pattern[str]
    others: re.Pattern[str]
    # Each other start word -> the offsets inside it where another one may begin.
    inner_starts: dict[str, tuple[int, ...]]

    def start_places(self, folded: str) -> dict[str, list[int]]:
        """Where each start word stands in `folded`, the longest at each place."""
        places: dict[str, list[int]] = {}
        match_other, inner = self.others.match, self.inner_starts
        for hit in self.others.finditer(folded):
            start = hit.start()
            word = hit.group(0)
            places.setdefault(word, []).append(start)
            # One may start inside another ("以上面": "上面"); finditer does not overlap.
            for offset in inner[word]:
                if overlapping := match_other(folded, start + offset):
                    places.setdefault(overlapping.group(0), []).append(start + offset)
        # Latin ones at word starts only (a start word may begin a longer word: with
        # invisible characters dropped, "ignore\u200bprevious" is one word).
        for hit in self.latin.finditer(folded):
            places.setdefault(hit.group(0), []).append(hit.start())
        return places


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
    others = set(own) - latin
    firsts = frozenset(word[0] for word in others)
    short = lambda word: len(word) <= _WHOLE_WORD_CHARS  # noqa: E731
    return _Index(
        rules,
        rules_at,
        re.compile(_at_word_start(trie_pattern(latin, whole_word=short))),
        # Most Chinese characters that start a word are not followed by one going on with it.
        re.compile(trie_pattern(others, second_char_check=True)),
        {word: _inner_offsets(word, firsts) for word in others},
    )


def _at_word_start(pattern: str) -> str:
    """A trie pattern of Latin words (it starts with the class of their first letters)
    that matches only at a word start. The check comes after that class, so the regex
    engine still skips ahead to a first letter instead of trying every place."""
    first_class_end = pattern.index("]") + 1  # the first letters are a-z: no "]" inside
    return pattern[:first_class_end] + "(?<![a-z][a-z])" + pattern[first_class_end:]


def _inner_offsets(word: str, firsts: frozenset[str]) -> tuple[int, ...]:
    """Offsets inside `word` where another start word may begin (its first character is
    one of `firsts`)."""
    return tuple(offset for offset in range(1, len(word)) if word[offset] in firsts)


def _prefixes(word: str, words: dict[str, list[Rule]]) -> list[str]:
    """The start words `word` begins with, itself included."""
    return [word[:length] for length in range(1, len(word) + 1) if word[:length] in words]
