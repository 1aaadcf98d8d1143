"""Why a text, or a memory as the model is shown it, looks like an attempt to steer the
model: matched on its folded form (`normalise.py`) by the rules of `steering.py` (a new
identity, an override of earlier instructions, a request for the hidden prompt, the limits
dropped, or a forged turn)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..store import MemoryRecord
from ..texts import memory_line
from .normalise import fold_for_matching, join_han_gaps
from .steering import Found, find_steering

SNIPPET_CHARS = 20


def injection_reason(text: str) -> str | None:
    """Why `text` looks like an attempt to steer the model (None if it does not), matched
    on its folded form (see `normalise.py`) with the blanks between Chinese
    characters removed."""
    found = steering_in(text)
    if found is None:
        return None
    snippet = " ".join(found.match.group(0).split())[:SNIPPET_CHARS]
    return f"内容疑似在操控 AI 的指令（“{snippet}”）"


def steering_in(text: str) -> Found | None:
    """The first steering match in `text` and its rule (its shape and language), or None."""
    joined = join_han_gaps(fold_for_matching(text))
    return find_steering(joined.text, joined.blanks)


def injection_reason_for_memory(
    content: str, tags: Iterable[object] = (), user_id: str | None = None
) -> str | None:
    """Why a memory looks like steering (None if it does not), read as the line the model
    is shown (content, tags and user id together, so that a phrase split between the
    content and a tag is read whole, as the model reads it)."""
    tag_texts = [str(tag) for tag in tags]
    if not (tag_texts or user_id):
        return injection_reason(content)
    # The line starts with the content and only adds after it, and a rule decides by what
    # stands before its match: one pass over the line finds whatever the content alone
    # holds too.
    return injection_reason(_rendered_line(content, tag_texts, user_id))


def _rendered_line(content: str, tags: Sequence[str], user_id: str | None) -> str:
    """A memory as `texts.memory_line` shows it to the model, without its id."""
    record = MemoryRecord(id="", content=content, normalized="", tags=list(tags), user_id=user_id)
    return memory_line(record).removeprefix("# ")
