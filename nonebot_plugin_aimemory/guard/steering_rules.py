"""A steering rule (a pattern tried where one of its start words stands, and the context in
which a match counts) and `Patterns`, which writes the patterns of one language from its
word classes (`lexicon/`): each class an alternation of its entries, folded like the text,
with bounded gaps between the parts of a shape."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lexicon import Lexicon
from .normalise import fold_for_matching
from .steering_contexts import Context

# Between the words of one entry: a few blanks or marks, or none ("off-limits", "offlimits").
_ENTRY_GAP = r"[^\w.!?;\n]{0,3}"
# What a stem ("ignor*") may be followed by: the rest of its word (or, where invisible
# characters glued words together, of the words after it: "ignore\u200bprevious").
_STEM_TAIL = r"[^\W\d_]{0,14}"
# Gaps within a clause: in words (blanks and marks, then a whole word), or in characters.
_SEPARATOR = r"[^\w.!?;]"  # a line break too: "previous\ninstructions" is one phrase
_WORD = r"[^\W_]+(?![^\W_])"
_IN_CLAUSE = "[^。.!?;,\n]"
_CHARACTERS_PER_WORD = 3
# In languages written with blanks, a match ends at a word end.
_WORD_END = r"(?![^\W\d_])"


@dataclass(frozen=True, slots=True)
class Rule:
    """One steering pattern of a shape ("override", "identity", "disclosure", "limits",
    "forged turn"), tried where one of `starts` stands; a match counts where `context`
    allows it."""

    shape: str
    language: str
    starts: tuple[str, ...]
    pattern: re.Pattern[str]
    context: Context

    def search(self, folded: str, blanks: frozenset[int]) -> re.Match[str] | None:
        """The first match in `folded` that counts, or None."""
        position = 0
        while (match := self.pattern.search(folded, position)) is not None:
            start = match.start()
            if self.context(folded, start, start in blanks):
                return match
            position = start + 1
        return None


def entry_pattern(entry: str) -> str:
    """One entry of a word class as a pattern over folded text (see `lexicon/`)."""
    folded = fold_for_matching(entry).strip()
    stem = folded.endswith("*")
    pieces = [re.escape(piece).replace("'", "'?") for piece in folded.rstrip("*").split(" ")]
    return _ENTRY_GAP.join(pieces) + (_STEM_TAIL if stem else "")


def start_word(entry: str) -> str:
    """Where an entry can be found: its first word, folded, without a stem's "*" (a Latin
    word of one or two letters with the next one: "ab jetzt" of "ab jetzt bist du")."""
    words = fold_for_matching(entry).strip().rstrip("*").split(" ")
    first = words[0].split("'")[0]
    if len(words) > 1 and first == words[0] and first.isascii() and len(first) <= 2:
        return f"{first} {words[1].split(chr(39))[0]}"
    return first


class Patterns:
    """The parts of one language's shapes: word classes, gaps, optional parts. A part made
    of a class the language leaves empty is None, and so is every sequence holding it, so
    a shape the language has no words for yields no rule."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon

    def entries(self, *names: str) -> list[str]:
        """The entries of the named classes."""
        found = (getattr(self.lexicon, name) for name in names)
        return [entry for words in found for entry in words.split("|") if entry]

    def of(self, *names: str) -> str | None:
        """Any entry of the named classes (longest first), or None if they are empty. A
        lookahead for their first characters comes first: tried at each position of a gap,
        it rejects most of them at once, where the alternation would try every entry."""
        entries = self.entries(*names)
        if not entries:
            return None
        patterns = sorted({entry_pattern(entry) for entry in entries}, key=len, reverse=True)
        first = "".join(sorted({re.escape(start_word(entry)[:1]) for entry in entries}))
        return f"(?=[{first}])(?:{'|'.join(patterns)})"

    def raw(self, name: str, *, negated: bool = False) -> str:
        """A class given as a raw pattern (`not_after`, `not_x`), as a lookahead."""
        pattern = getattr(self.lexicon, name)
        return f"(?!{pattern})" if pattern and negated else ""

    def gap(self, words: int) -> str:
        """Up to `words` words of the same clause (in characters where no blanks part them)."""
        if self.lexicon.spaced:
            return f"(?:{_SEPARATOR}+{_WORD}){{0,{words}}}?{_SEPARATOR}*"
        return f"{_IN_CLAUSE}{{0,{words * _CHARACTERS_PER_WORD + 2}}}?" if words else " ?"

    def not_before(self, name: str) -> str:
        """A lookahead: no entry of a raw class (`not_x`) comes next, blanks skipped."""
        pattern = getattr(self.lexicon, name)
        if not pattern:
            return ""
        blanks = f"{_SEPARATOR}*" if self.lexicon.spaced else ""
        return f"(?!{blanks}(?:{pattern}))"

    def seq(self, *parts: str | int | None) -> str | None:
        """The parts one after another (an int: a gap of that many words)."""
        if any(part is None for part in parts):
            return None
        return "".join(self.gap(part) if isinstance(part, int) else str(part) for part in parts)

    @staticmethod
    def opt(part: str | None) -> str:
        """`part`, or nothing."""
        return f"(?:{part})?" if part else ""

    @staticmethod
    def alt(*options: str | None) -> str | None:
        """Any of the options that exist, or None if none does."""
        present = [option for option in options if option]
        return f"(?:{'|'.join(present)})" if present else None

    def rule(
        self, shape: str, starts: tuple[str, ...], rest: str | None, context: Context
    ) -> Rule | None:
        """A rule: an entry of the `starts` classes, then `rest` (None without either)."""
        return self.rule_from(shape, starts, self.seq(self.of(*starts), rest), context)

    def pair(self, first: str, second: str) -> tuple[tuple[str, ...], str | None]:
        """Two classes one after the other ("不要" + "遵守", "你" + "现在"), and where the
        pair starts. Where blanks part no words, the two are written together, and the
        pair starts at the whole of both: "你现在" is looked for, not each "你"."""
        pattern = self.seq(self.of(first), 1 if self.lexicon.spaced else "", self.of(second))
        if self.lexicon.spaced:
            return tuple(dict.fromkeys(map(start_word, self.entries(first)))), pattern
        firsts, seconds = self.entries(first), self.entries(second)
        glued = (fold_for_matching(a + b) for a in firsts for b in seconds)
        return tuple(dict.fromkeys(glued)), pattern

    def rule_from(
        self,
        shape: str,
        starts: tuple[str, ...],
        pattern: str | None,
        context: Context,
        *,
        words: tuple[str, ...] = (),
    ) -> Rule | None:
        """A rule whose whole `pattern` starts with an entry of the `starts` classes (or
        with one of `words`)."""
        words = words or tuple(dict.fromkeys(start_word(entry) for entry in self.entries(*starts)))
        if pattern is None or not words:
            return None
        end = _WORD_END if self.lexicon.spaced else ""
        compiled = re.compile(f"(?:{pattern}){end}", re.MULTILINE)
        return Rule(shape, self.lexicon.name, words, compiled, context)
