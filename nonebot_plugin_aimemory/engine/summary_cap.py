"""A summary kept under its cap: the hard cut that is the last resort, and how many of a
summary's concrete details another text still holds (numbers, words in Latin letters and
pairs of Han characters: names, places and things are what a shortened summary loses first,
and a small model's paraphrase keeps their characters), to choose between the model's
shorter summary and a hard cut of the long one: whichever keeps more."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .tokens import TokenCounter

# Characters of transcript per token of chunk budget: CJK runs ~0.8 chars/token, so stay under.
CHARS_PER_CHUNK_TOKEN = 0.7

_NUMBER = re.compile(r"\d+(?:[.:：/-]\d+)*")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def details(text: str) -> frozenset[str]:
    """The concrete details of `text`, each as it can be found again in another text."""
    found = set(_NUMBER.findall(text))
    found.update(word.lower() for word in _LATIN_WORD.findall(text))
    for run in _HAN_RUN.findall(text):
        found.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(found)


def details_kept(original: str, candidate: str) -> int:
    """How many of `original`'s details `candidate` still holds."""
    return len(details(original) & details(candidate))


def cap_summary(summary: str, max_tokens: int, counter: TokenCounter) -> str:
    """Hard-cut `summary` to `max_tokens`, the last resort after asking the model to shorten
    it: section headers stay; items repeating an earlier one go first, then the oldest items
    of the longest section."""
    if counter.count(summary) <= max_tokens:
        return summary
    lines = summary.splitlines()
    costs = [counter.count(line) + 1 for line in lines]
    headers = {i for i, line in enumerate(lines) if _is_section_header(line)}
    sections: list[list[int]] = [[]]
    for index in range(len(lines)):
        if index in headers:
            sections.append([])
        else:
            sections[-1].append(index)
    total = sum(costs)
    # A line said again carries nothing new: repeats go before any first saying.
    dropped = _repeated_lines(lines, headers)
    total -= sum(costs[index] for index in dropped)
    sections = [[index for index in section if index not in dropped] for section in sections]
    while total > max_tokens:
        longest = max(sections, key=len)
        if not longest:
            break
        index = longest.pop(0)
        dropped.add(index)
        total -= costs[index]
    kept = "\n".join(line for i, line in enumerate(lines) if i not in dropped)
    if counter.count(kept) > max_tokens:  # headers alone, or one enormous line
        kept = kept[: max(int(max_tokens * CHARS_PER_CHUNK_TOKEN), 1)]
    return kept


def _repeated_lines(lines: Sequence[str], headers: set[int]) -> set[int]:
    """The items that repeat an earlier item word for word."""
    seen: set[str] = set()
    repeated: set[int] = set()
    for index, line in enumerate(lines):
        if index in headers or not line.strip():
            continue
        if line.strip() in seen:
            repeated.add(index)
        seen.add(line.strip())
    return repeated


def _is_section_header(line: str) -> bool:
    stripped = line.strip()
    return (
        bool(stripped)
        and stripped.endswith(("：", ":"))
        and not stripped.startswith(("-", "•", "*"))
    )
