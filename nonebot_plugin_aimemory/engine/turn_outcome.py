"""The bookkeeping of one turn: what it has done so far, what it produced, and what a
failed turn keeps of its messages."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum

from .errors import ContextLengthError, LLMError
from .messages import Message, ToolCall
from .usage import Usage
from .window import REASONING_PLACEHOLDER

logger = logging.getLogger("nonebot_plugin_aimemory")


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


class AnswerMode(IntEnum):
    """How the next request asks for an answer. A model that loops on tools, repeats a
    call, invents tools or answers with nothing is asked again one step further down, so a
    turn makes at most two calls more than its rounds and always ends in text if the model
    has any to give."""

    TOOLS = 0
    """Tools offered; the model chooses."""
    NO_TOOL_CHOICE = 1
    """Tools still listed (the prefix the provider cached stays the same) with
    `tool_choice: "none"`."""
    NO_TOOLS = 2
    """No tools at all: for servers that ignore `tool_choice`."""

    def next(self) -> AnswerMode | None:
        """The mode after this one; None after the last."""
        return None if self is AnswerMode.NO_TOOLS else AnswerMode(self + 1)


def call_signature(call: ToolCall) -> str:
    """A call's name and arguments, the arguments' key order and spacing left out: two
    calls with the same signature do the same thing."""
    try:
        arguments = json.dumps(json.loads(call.arguments or "{}"), sort_keys=True)
    except (json.JSONDecodeError, RecursionError):
        arguments = call.arguments.strip()
    return f"{call.name}\0{arguments}"


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
    mode: AnswerMode = AnswerMode.TOOLS
    # Every call the turn has run, by signature, and the unknown tool names it was told of.
    call_signatures: set[str] = field(default_factory=set)
    unknown_tools: set[str] = field(default_factory=set)
    # Whether the answer was asked for again for repeating an earlier reply, and whether
    # the requests carry the note asking for an answer (answer_notes.py).
    asked_again: bool = False
    answer_noted: bool = False
    # The earlier reply an answer repeated: the requests after it leave such replies out.
    repeated: str = ""
    # The last message of the latest request, as sent: what an answer may copy back.
    last_asked: str = ""

    def loop_in(self, calls: Sequence[ToolCall], known_tools: Collection[str]) -> str | None:
        """Why running `calls` would go round in circles, or None: each repeats a call the
        turn already ran, or one names a tool that does not exist after the model was told
        which exist."""
        signatures = {call_signature(call) for call in calls}
        if signatures <= self.call_signatures:
            return "the same calls again"
        unknown = {call.name for call in calls} - set(known_tools)
        if unknown and self.unknown_tools:
            return f"unknown tools again ({', '.join(sorted(unknown))})"
        return None

    def note_calls(self, calls: Sequence[ToolCall], known_tools: Collection[str]) -> None:
        """Remember a round's calls, so a repeat or a second unknown tool is seen."""
        self.call_signatures |= {call_signature(call) for call in calls}
        self.unknown_tools |= {call.name for call in calls} - set(known_tools)

    def ask_plainer(self, key: str, why: str) -> None:
        """Ask the next request one mode further down; raise LLMError("empty") after the
        last (the member gets the usual notice)."""
        mode = self.mode.next()
        if mode is None:
            raise LLMError("empty", f"no answer without tools after {self.rounds} rounds ({key})")
        logger.info("%s: %s; asking for an answer (%s)", key, why, mode.name)
        self.mode = mode

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
