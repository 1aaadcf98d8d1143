"""The bookkeeping of one turn: what it has done so far, what it produced, and what a
failed turn keeps of its messages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .errors import ContextLengthError, LLMError
from .messages import Message
from .usage import Usage
from .window import REASONING_PLACEHOLDER


class AllowanceUsedUp(Exception):
    """The turn may make no further model call (its chat's daily quota is used up). What it
    did so far is kept, like after a transient failure, to be answered another time."""


MayCall = Callable[[], bool]
"""Asked before each model call of a turn (a fold's included): whether it may be made."""


def always() -> bool:
    """A turn without a limit on its calls."""
    return True


def check_allowance(may_call: MayCall, key: str) -> None:
    """Raise AllowanceUsedUp when the turn of `key` may not call the model again."""
    if not may_call():
        raise AllowanceUsedUp(key)


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
    # Index in `pending` -> the result the window keeps there instead (ToolText.kept).
    kept_instead: dict[int, Message] = field(default_factory=dict)

    def add(self, compacted: Compacted) -> None:
        """Count a compaction's usage, and the compaction itself when it changed the window."""
        self.usage += compacted.usage
        self.compressions += compacted.changed

    def add_round(self, reply: Message, results: list[Message], kept: list[Message | None]) -> None:
        """Append a tool round; `kept[i]`, when given, is what the window keeps of result i."""
        start = len(self.pending) + 1
        self.pending += [reply, *results]
        for index, replacement in enumerate(kept):
            if replacement is not None:
                self.kept_instead[start + index] = replacement

    def kept_pending(self) -> list[Message]:
        """`pending` as the window keeps it: results that stay in their turn replaced, and
        the reasoning and interim text the model wrote after reading them blanked (the
        placeholder keeps thinking models' histories valid). The answer's text stays: it
        was said in the chat."""
        if not self.kept_instead:
            return list(self.pending)
        first = min(self.kept_instead)
        kept = [self.kept_instead.get(i, message) for i, message in enumerate(self.pending)]
        for index in range(first, len(kept)):
            message = kept[index]
            if message.role != "assistant":
                continue
            reasoning = REASONING_PLACEHOLDER if message.reasoning else message.reasoning
            content = "" if message.tool_calls and message.content else message.content
            kept[index] = replace(
                message, content=content, reasoning=reasoning, _json=None, tokens=-1
            )
        return kept


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
