"""The bookkeeping of one turn: what it has done so far, what it produced, and what a
failed turn keeps of its messages."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ContextLengthError, LLMError
from .messages import Message
from .usage import Usage


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What a turn produced: the reply, usage over all calls (compression included), tool
    rounds used and how often the window was compressed (or, that failing, truncated)."""

    reply: str
    usage: Usage
    tool_rounds: int
    compressions: int = 0


@dataclass(frozen=True, slots=True)
class Compacted:
    """What one compaction did: the compressor's usage and whether the window changed."""

    usage: Usage = field(default_factory=Usage)
    changed: bool = False


@dataclass(slots=True)
class TurnProgress:
    """A turn so far: its messages after the user's (whole tool rounds, then the answer),
    usage, window-changing compactions, tool rounds, and how much of `pending` the last
    accepted request carried (None: none was accepted)."""

    pending: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    compressions: int = 0
    rounds: int = 0
    accepted: int | None = None

    def add(self, compacted: Compacted) -> None:
        """Count a compaction's usage, and the compaction itself when it changed the window."""
        self.usage += compacted.usage
        self.compressions += compacted.changed


def kept_after(
    error: LLMError, user: Message, pending: list[Message], accepted: int | None
) -> list[Message] | None:
    """What a failed turn keeps of its messages; None keeps them all. A transient failure
    keeps them all, to be answered with the next message (so does a context-length error,
    which compression deals with). Any other failure, a content refusal above all, would
    repeat on the same messages: what the failed request added is dropped (the user's
    message on the first call, the newest tool round after that) and what the provider had
    already accepted is kept: the user's message with the tool rounds before the newest."""
    if error.transient or isinstance(error, ContextLengthError):
        return None
    if accepted is None:
        return []
    return [user, *pending[:accepted]]
