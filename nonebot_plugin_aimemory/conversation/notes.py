"""The notes put before a turn's message: the memories relevant to it (memory/inject.py)
and the chat-log lines recalled for it (chatlog/recall.py), each its own quoted block, then
one line that closes them, so that the message, not the notes, is what the model answers.
They are for that turn only: the window keeps (and the store persists) the message without
them."""

from __future__ import annotations

from collections.abc import Sequence

from .. import prompts
from ..engine import Message, note_memories


def with_notes(message: Message, blocks: Sequence[str]) -> tuple[Message, str | None]:
    """The message with the non-empty `blocks` before it, and the text to persist instead;
    the message unchanged (and None) when there are none."""
    notes = [block for block in blocks if block]
    if not notes:
        return message, None
    note_memories("\n".join(notes))
    text = "\n".join([*notes, prompts.MEMORY_INJECTION_FOOTER]) + "\n"
    return message.with_prefix(text), message.text
