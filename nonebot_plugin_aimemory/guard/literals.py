"""Long lists of literal words as one regex written as a trie ("你(?:的|现在)?"): the regex
engine then tries each character once, where a plain alternation of a thousand words tries
every word in turn (some 100 times slower for the order words of five languages). Wide
nodes are split in halves told apart by a class of their first characters, and the whole
pattern starts with a class, which the regex engine skips ahead to."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# After a word that ends in a Latin letter, no letter may follow ("now", not "nowhere").
_LATIN_END = "(?![a-z])"
# Up to this many alternatives are tried one by one; more are split in halves.
_BRANCHES_TRIED_IN_TURN = 6


def trie_pattern(
    words: Iterable[str],
    *,
    latin_word_end: bool = False,
    whole_word: Callable[[str], bool] | None = None,
    second_char_check: bool = False,
) -> str:
    """A pattern matching any of `words`, longest first. With `latin_word_end`, a word that
    ends in a Latin letter matches only at a word end, and an apostrophe may be left out
    ("lets" for "let's"); with `whole_word`, only the words it names end at a word end;
    with `second_char_check`, a place is turned away at once unless the next character
    can go on with some word (`_second_char_check`)."""
    trie: dict[str, dict] = {}
    for word in words:
        spellings = {word, word.replace("'", "")} if latin_word_end else {word}
        for spelling in spellings:
            node = trie
            for char in spelling:
                node = node.setdefault(char, {})
            ends_word = latin_word_end or (whole_word is not None and whole_word(word))
            node[""] = {"end": {}} if ends_word else {}
    children = sorted((char, child) for char, child in trie.items() if char)
    if not children:
        return "(?!)"
    # The first character taken by one class; which word it starts, told by lookbehinds.
    firsts = "".join(re.escape(char) for char, _ in children)
    rests = [(re.escape(char), _node_pattern(child, char)) for char, child in children]
    check = _second_char_check(trie) if second_char_check else ""
    return f"[{firsts}]{check}{_dispatch(rests)}"


def _second_char_check(trie: dict[str, dict]) -> str:
    """A lookahead for the characters a word's second one can be (a one-character word
    passes by a lookbehind): in Chinese text most places whose character starts some word
    ("你", "不") are not followed by one that goes on with any, and two class tests turn
    them away where the lookbehinds of `_dispatch` would take some eight."""
    seconds = sorted({char for child in trie.values() for char in child if char})
    singles = sorted(char for char, child in trie.items() if char and "" in child)
    ahead = f"(?=[{''.join(map(re.escape, seconds))}])" if seconds else "(?!)"
    if not singles:
        return ahead
    return f"(?:{ahead}|(?<=[{''.join(map(re.escape, singles))}]))"


def _node_pattern(node: dict[str, dict], last: str) -> str:
    branches = [
        re.escape(char) + _node_pattern(child, char) for char, child in sorted(node.items()) if char
    ]
    ending = _LATIN_END if "end" in node.get("", {}) and "a" <= last <= "z" else ""
    if not branches:
        return ending
    body = _split_by_first_char(branches)
    if "" in node:
        # The longer words come first, then the word that ends here.
        return f"(?:{body}|{ending})" if ending else f"(?:{body})?"
    return body if len(branches) == 1 else f"(?:{body})"


def _split_by_first_char(branches: list[str]) -> str:
    """Branches (sorted, each starting with a distinct character) as alternatives; many
    of them as a tree whose halves are told apart by a class of their first characters,
    so that a place is tested some log2(n) times instead of n."""
    if len(branches) <= _BRANCHES_TRIED_IN_TURN:
        return "|".join(branches)
    middle = len(branches) // 2
    left, right = branches[:middle], branches[middle:]
    firsts = "".join(_first_char(branch) for branch in left)
    return f"(?=[{firsts}])(?:{_split_by_first_char(left)})|{_split_by_first_char(right)}"


def _dispatch(rests: list[tuple[str, str]]) -> str:
    """After the first character is taken: the rest of the word it starts, chosen by a
    lookbehind at that character (halves of a class, as in `_split_by_first_char`)."""
    if len(rests) == 1:
        char, rest = rests[0]
        return f"(?<={char}){rest}" if rest else f"(?<={char})"
    if len(rests) <= _BRANCHES_TRIED_IN_TURN:
        return "(?:" + "|".join(f"(?<={char}){rest}" for char, rest in rests) + ")"
    middle = len(rests) // 2
    left, right = rests[:middle], rests[middle:]
    firsts = "".join(char for char, _ in left)
    return f"(?:(?<=[{firsts}]){_dispatch(left)}|{_dispatch(right)})"


def _first_char(branch: str) -> str:
    """The (escaped) character a branch starts with."""
    return branch[:2] if branch.startswith("\\") else branch[:1]
