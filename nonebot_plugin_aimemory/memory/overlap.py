"""What a new memory shares with those a scope keeps: near duplicates (shown to whoever
saves one, so they may merge them), and for the background writers nobody watches, what
adds nothing (a rewording, or a part of a member's words already quoted) and what it makes
redundant (an earlier background note quoting a part of its words)."""

from __future__ import annotations

from collections.abc import Sequence

from ..store import MemoryRecord
from ..text import segmenter
from .grounding import said_by_id, without_attribution
from .index import IndexedMemory, LoadedScope
from .rules import NEAR_DUPLICATE_DICE, clean_user_id, different_people, people_of

# Writers nobody watches: the tool result that asks a chatting model to merge a near
# duplicate reaches no one, so a near duplicate of theirs that adds no word is not saved (a
# reviewer rewording a memory every review filled a scope with copies, issue #36).
UNWATCHED_SOURCES = frozenset(("extract", "review"))


def near_duplicates(loaded: LoadedScope, text: str, user_id: str | None) -> list[IndexedMemory]:
    """The live memories of the scope that say nearly what `text` says, about the same
    people: saved anyway, but shown to whoever saved it."""
    tokens = segmenter.token_set(text)
    subject = people_of(text, clean_user_id(user_id))
    return [
        e
        for e in loaded.live()
        if segmenter.dice(tokens, e.content_tokens) >= NEAR_DUPLICATE_DICE
        and not different_people(subject, people_of(e.record.content, e.record.user_id))
    ]


def adds_nothing(
    loaded: LoadedScope, similar: Sequence[IndexedMemory], text: str, source: str
) -> MemoryRecord | None:
    """The memory that already says all `text` says, when a writer nobody watches saves it
    (`restated`, `quoted_within`); None for anyone else's save, or a note that adds."""
    if source not in UNWATCHED_SOURCES:
        return None
    return restated(similar, text) or quoted_within(loaded, text)


def restated(similar: Sequence[IndexedMemory], text: str) -> MemoryRecord | None:
    """The first of these near duplicates that holds every word of `text`: a rewording
    that adds nothing (a changed number or a new name is new, and saved)."""
    tokens = segmenter.token_set(text)
    return next((e.record for e in similar if tokens <= e.content_tokens), None)


def quoted_within(loaded: LoadedScope, text: str) -> MemoryRecord | None:
    """The first live memory quoting the same member's words around all of `text`'s: the
    real small model's reviewer re-saved "小明(20001)说：“我最喜欢这个乐队了”" beside the
    extraction's "小明(20001)说：“最近一直在听新裤子的歌，我最喜欢这个乐队了”". Too short
    to be a near duplicate, a part of words already kept adds nothing and names less."""
    return next(iter(_quoting(loaded, text, whole=True)), None)


def parts_quoted_by(loaded: LoadedScope, text: str, source: str) -> list[MemoryRecord]:
    """The live background notes quoting a part of the same member's words that `text`,
    a background writer's, quotes whole: in the real run the reviewer's part came first,
    and stayed beside the extraction's whole words. Notes a member or a person saved are
    theirs, and stay; so do all when `text` is theirs."""
    if source not in UNWATCHED_SOURCES:
        return []
    return [
        record
        for record in _quoting(loaded, text, whole=False)
        if record.source in UNWATCHED_SOURCES
    ]


def _quoting(loaded: LoadedScope, text: str, *, whole: bool) -> list[MemoryRecord]:
    """The live memories quoting the same member as `text` whose words hold all of its
    words (`whole`), or are all held by them, not the same words."""
    speaker = said_by_id(text)
    if speaker is None:
        return []
    words = without_attribution(text).strip()
    found = []
    for entry in loaded.live():
        if said_by_id(entry.record.content) != speaker:
            continue
        theirs = without_attribution(entry.record.content).strip()
        if theirs != words and (words in theirs if whole else theirs in words):
            found.append(entry.record)
    return found
