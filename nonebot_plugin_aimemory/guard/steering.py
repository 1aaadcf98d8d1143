"""The shapes of text that steer a model, found in folded text (lower case, ASCII
punctuation, see `normalise.py`): the rules of `steering_rules.py`, tried only where one of
their start words stands.

Every pattern is linear: it starts with literal words, its gaps are bounded, and where its
words may stand is decided by a check of the few characters before a match
(`steering_contexts.py`)."""

from __future__ import annotations

import functools
import re

from .steering_rules import STEERING_RULES, Rule

# Rules are tried only where one of their start words stands: each start word has a key
# (its first English word, or the shortest start word it begins with: "你" for "你现在"),
# the keys are found at once (the English ones with `str.find`, at word starts; the others,
# Chinese, brackets and quotes, with one pattern of literals), and the rules of a key are
# matched right where it stands.
_ASCII_WORD = re.compile("[a-z]+")
_TRIED_IN_PLACE_AT_MOST = 32


def _ascii_key(word: str) -> str | None:
    """The English word a start word begins with ("tell" for "tell me"), or None."""
    match = _ASCII_WORD.match(word)
    return match.group(0) if match else None


def _index_by_key(rules: tuple[Rule, ...]) -> dict[str, tuple[Rule, ...]]:
    """The rules to try where each key stands: a key is a start word's first English word,
    or the shortest start word it begins with."""
    others = {w for rule in rules for w in rule.starts if _ascii_key(w) is None}
    index: dict[str, list[Rule]] = {}
    for rule in rules:
        for word in rule.starts:
            key = _ascii_key(word) or min((s for s in others if word.startswith(s)), key=len)
            keyed = index.setdefault(key, [])
            if rule not in keyed:
                keyed.append(rule)
    return {key: tuple(keyed) for key, keyed in index.items()}


_RULES_BY_KEY = _index_by_key(STEERING_RULES)
_ENGLISH_KEYS = frozenset(key for key in _RULES_BY_KEY if _ascii_key(key) == key)
_OTHER_KEYS = re.compile(
    "|".join(
        re.escape(key) for key in sorted(set(_RULES_BY_KEY) - _ENGLISH_KEYS, key=len, reverse=True)
    )
)


_ENGLISH_KEY_LENGTHS = sorted({len(key) for key in _ENGLISH_KEYS})
_LATIN_WORD = re.compile(b"[a-z]+")
_LOWER_A, _LOWER_Z = ord("a"), ord("z")


@functools.lru_cache(maxsize=4096)
def _english_keys_of(word: bytes) -> tuple[str, ...]:
    """The English keys `word` begins with."""
    text = word.decode()
    return tuple(
        text[:length]
        for length in _ENGLISH_KEY_LENGTHS
        if length <= len(text) and text[:length] in _ENGLISH_KEYS
    )


def find_steering(folded: str, blanks: frozenset[int] = frozenset()) -> re.Match[str] | None:
    """A match of a steering rule in `folded` that counts, or None; `blanks` are the
    positions where a blank between Chinese characters was removed."""
    for key, starts in _key_places(folded).items():
        rules = _RULES_BY_KEY[key]
        if len(starts) > _TRIED_IN_PLACE_AT_MOST:
            # A flood of one word: let the regex engine scan for the rules instead.
            for rule in rules:
                if (match := rule.search(folded, blanks)) is not None:
                    return match
            continue
        for at in starts:
            for rule in rules:
                if (match := rule.match_at(folded, at, at in blanks)) is not None:
                    return match
    return None


def _key_places(folded: str) -> dict[str, list[int]]:
    """Where each key stands in `folded` (English ones only at a word start)."""
    places: dict[str, list[int]] = {}
    for hit in _OTHER_KEYS.finditer(folded):
        start, end = hit.span()
        places.setdefault(hit.group(0), []).append(start)
        # A key may start inside another ("以上面": "以上", "上面"); finditer does not overlap.
        for inside in range(start + 1, end):
            if (overlapping := _OTHER_KEYS.match(folded, inside)) is not None:
                places.setdefault(overlapping.group(0), []).append(inside)
    # At word starts, not only as whole words: with invisible characters dropped,
    # "ignore\u200bprevious" is one word, "ignoreprevious". Looked up in bytes, one per
    # character, since a text holding Chinese would cost a conversion per `str.find`.
    latin = folded.encode("ascii", "replace")
    keys = {key for word in set(_LATIN_WORD.findall(latin)) for key in _english_keys_of(word)}
    for key in keys:
        key_bytes = key.encode()
        at = latin.find(key_bytes)
        while at >= 0:
            if at == 0 or not _LOWER_A <= latin[at - 1] <= _LOWER_Z:
                places.setdefault(key, []).append(at)
            at = latin.find(key_bytes, at + 1)
    return places
