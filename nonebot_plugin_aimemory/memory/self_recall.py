"""A member asking the bot to recall something about themselves ("我开的是什么车来着？",
"你还记得我女儿叫什么吗？") asks about what they told it, in words their note may not share:
the note says "小米SU7", the question "车". Without vectors nothing bridges that, and a
real small model answered from nothing ("我开的是一辆丰田凯美瑞", issue #36). When auto-inject
finds no note for such a question, the asker's own notes go before it instead, newest
first: the few things the bot knows about the one who asks."""

from __future__ import annotations

from collections.abc import Container, Sequence

from ..text import is_question, query
from .index import IndexedMemory
from .rules import speaks_in_first_person


def asks_to_recall_oneself(text: str) -> bool:
    """Whether `text` is a question about its asker ("我", "my") that asks to recall
    ("来着", "记得", "之前", "remember")."""
    if not is_question(text) or not speaks_in_first_person(text):
        return False
    return query.asks_to_recall(text)


def askers_own(
    live: Sequence[IndexedMemory], asker: str, personal: Container[str]
) -> list[IndexedMemory]:
    """The notes about `asker` (their QQ number) among `live`, newest first: those saved
    about them, and their personal ones (`personal`: those ids)."""
    own = [entry for entry in live if entry.record.user_id == asker or entry.record.id in personal]
    own.sort(key=lambda entry: (entry.record.updated_at, entry.record.id), reverse=True)
    return own
