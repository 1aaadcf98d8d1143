"""What a turn did, for someone watching it (the panel's try page): the memories put before
the message, each tool call with the result the model was shown, and what the provider said
when the model failed. Only a turn run under `tracing(trace)` records anything: a turn of
QQ runs under none, so what its members get is unchanged."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from .errors import LLMError
from .messages import ToolCall


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call of the turn: the tool, its arguments as the model wrote them (JSON
    text) and the result it was shown."""

    name: str
    arguments: str
    result: str


@dataclass(frozen=True, slots=True)
class TurnFailure:
    """Why the model gave no answer, as the provider said it (the log line's words)."""

    model: str
    kind: str
    status: int | None
    code: str | None
    message: str


@dataclass(slots=True)
class TurnTrace:
    """What one turn did, filled in while it runs."""

    memories: str = ""
    tools: list[ToolUse] = field(default_factory=list)
    failure: TurnFailure | None = None


_current: ContextVar[TurnTrace | None] = ContextVar("aimemory_turn_trace", default=None)


@contextmanager
def tracing(trace: TurnTrace | None) -> Iterator[None]:
    """Record what the enclosed turn does into `trace` (None: record nothing)."""
    token = _current.set(trace)
    try:
        yield
    finally:
        _current.reset(token)


def note_memories(block: str) -> None:
    """The memories put before the turn's message, as the model reads them."""
    trace = _current.get()
    if trace is not None:
        trace.memories = block


def note_tool_uses(calls: Sequence[ToolCall], results: Sequence[str]) -> None:
    """A round of tool calls and the results the model was shown, in call order."""
    trace = _current.get()
    if trace is not None:
        trace.tools += [
            ToolUse(call.name, call.arguments, result)
            for call, result in zip(calls, results, strict=True)
        ]


def note_failure(model: str, error: LLMError) -> None:
    """The model failed the turn: what the provider answered."""
    trace = _current.get()
    if trace is not None:
        said = error.provider_message or error.detail
        trace.failure = TurnFailure(model, error.kind, error.status, error.code, said[:300])
