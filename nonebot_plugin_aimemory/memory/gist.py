"""The gist of a memory's content, what a rewording keeps: its tokens, the people and the
numbers it names. A save whose gist matches a tombstoned memory's is that deleted fact
reworded ("住在阳光小区3号楼" / "住阳光小区的3号楼") and is refused like the exact text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import segmenter
from .rules import different_people, people_of

# Dice of the token sets (the segmentation of the near-duplicate hints) from which two
# texts say the same thing.
REWORDED_TOMBSTONE_DICE = 0.8

_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class Gist:
    """Tokens, people (QQ numbers) and numbers of one normalised content."""

    tokens: frozenset[str]
    people: frozenset[str]
    numbers: frozenset[str]

    @classmethod
    def of(cls, normalized: str, user_id: str | None) -> Gist:
        """The gist of a normalised content and the QQ number it is about, if any."""
        people = people_of(normalized, user_id)
        # A QQ number is compared as a person, whether named in the text or in user_id.
        numbers = frozenset(_NUMBER.findall(normalized)) - people
        return cls(segmenter.token_set(normalized), people, numbers)

    def rewords(self, other: Gist) -> bool:
        """Whether the two say the same thing: nearly the same tokens, about the same
        person (or no one named), with the same numbers where both have some — a corrected
        date or house number ("3月5日" → "3月6日") is a new fact, not the deleted one."""
        return (
            segmenter.dice(self.tokens, other.tokens) >= REWORDED_TOMBSTONE_DICE
            and not different_people(self.people, other.people)
            and not _different_numbers(self.numbers, other.numbers)
        )


def _different_numbers(one: frozenset[str], other: frozenset[str]) -> bool:
    return bool(one) and bool(other) and one != other
