"""The per-conversation message window: a running token total and the one function that
turns any stored history into a history the chat APIs accept."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from .messages import ImagePart, Message, Part, TextPart
from .tokens import TokenCounter, message_tokens


class Window:
    """The messages of one conversation (no system prompt) with their token total kept
    current, and their API-safe form kept as they grow (a request is built every turn)."""

    def __init__(self, counter: TokenCounter, messages: Iterable[Message] = ()) -> None:
        self._counter = counter
        # Read freely; changed only through extend, replace and clear (which keep the token
        # total and the API-safe form in step).
        self.messages: list[Message] = []
        self.tokens = 0
        # api_safe(self.messages), extended with each turn; None: to be worked out again.
        self._safe: list[Message] | None = []
        self.extend(messages)

    def __len__(self) -> int:
        return len(self.messages)

    def extend(self, messages: Iterable[Message]) -> None:
        """Append messages, counting only the new ones."""
        added = list(messages)
        for message in added:
            self.tokens += message_tokens(message, self._counter)
        self.messages.extend(added)
        if not added or self._safe is None:
            return
        if added[0].role == "user":
            _fold_units(self._safe, _complete_units(added))
        else:
            self._safe = None  # tool results or an assistant may complete what came before

    def replace(self, messages: Iterable[Message]) -> None:
        """Swap the whole content (after compression or truncation)."""
        self.clear()
        self.extend(messages)

    def clear(self) -> None:
        """Drop every message."""
        self.messages = []
        self.tokens = 0
        self._safe = []

    def api_safe_with(self, tail: Sequence[Message]) -> list[Message]:
        """`api_safe([*self.messages, *tail])`, reusing the window's part: a user message
        starts a new unit, so what comes before it is cut and merged the same either way."""
        if not tail or tail[0].role != "user":
            return api_safe([*self.messages, *tail])
        if self._safe is None:
            self._safe = api_safe(self.messages)
        result = list(self._safe)
        _fold_units(result, _complete_units(tail))
        return result


def api_safe(messages: Sequence[Message]) -> list[Message]:
    """The longest faithful version of `messages` that every OpenAI-compatible API accepts.

    Guarantees: no system message (the caller puts its one system prompt first); the first
    message is a user message; every assistant `tool_calls` is followed by exactly one tool
    result per id; no tool message without its assistant; no two user or two assistant
    messages in a row (they are merged). A message's reasoning stays with it, through a
    merge too. Messages that need no change are returned as the same objects, so their
    cached JSON is reused.
    """
    result: list[Message] = []
    _fold_units(result, _complete_units(messages))
    return result


def _fold_units(result: list[Message], units: list[list[Message]]) -> None:
    """Append `units` to the API-safe `result`: none before the first user message, and a
    unit whose head has the role of the message before it merged into that one."""
    for unit in units:
        head = unit[0]
        if not result and head.role != "user":
            continue
        previous = result[-1] if result else None
        if previous is not None and previous.role == head.role and not previous.tool_calls:
            result[-1] = _merge(previous, head)
            result.extend(unit[1:])
        else:
            result.extend(unit)


def _complete_units(messages: Sequence[Message]) -> list[list[Message]]:
    """Split into units (a user message, a plain assistant message, or an assistant tool call
    with one result per id), dropping orphans, incomplete chains and empty assistants."""
    units: list[list[Message]] = []
    index = 0
    count = len(messages)
    while index < count:
        message = messages[index]
        index += 1
        if message.role == "user":
            units.append([message])
        elif message.role == "assistant" and not message.tool_calls:
            if message.content is not None:
                units.append([message])
        elif message.role == "assistant":
            results: list[Message] = []
            while index < count and messages[index].role == "tool":
                results.append(messages[index])
                index += 1
            units.extend(_tool_chain_unit(message, results))
        # system and orphan tool messages are dropped
    return units


def _tool_chain_unit(call_message: Message, results: list[Message]) -> list[list[Message]]:
    by_id: dict[str, Message] = {}
    for result in results:
        if result.tool_call_id is not None and result.tool_call_id not in by_id:
            by_id[result.tool_call_id] = result
    call_ids = [call.id for call in call_message.tool_calls]
    if len(set(call_ids)) == len(call_ids) and all(i in by_id for i in call_ids):
        return [[call_message, *(by_id[i] for i in call_ids)]]
    # An unanswered call cannot be sent; keep what the assistant said, if anything.
    if call_message.text:
        return [[Message("assistant", call_message.text, reasoning=call_message.reasoning)]]
    return []


def _merge(first: Message, second: Message) -> Message:
    """Join two same-role messages into one (the second's tool calls kept, both reasonings)."""
    reasonings = [r for r in (first.reasoning, second.reasoning) if r is not None]
    reasoning = "\n".join(reasonings) if reasonings else None
    if isinstance(first.content, tuple) or isinstance(second.content, tuple):
        parts: tuple[Part, ...] = (
            *_as_parts(first),
            TextPart("\n"),
            *_as_parts(second),
        )
        return Message(first.role, parts, tool_calls=second.tool_calls, reasoning=reasoning)
    joined = "\n".join(t for t in (first.text, second.text) if t)
    return Message(first.role, joined, tool_calls=second.tool_calls, reasoning=reasoning)


def _as_parts(message: Message) -> tuple[TextPart | ImagePart, ...]:
    if isinstance(message.content, tuple):
        return message.content
    return (TextPart(message.text),)


# What a thinking model gets back for a tool exchange stored without its reasoning (by an
# older version, or from a non-thinking model since switched): DeepSeek V4 takes an empty
# string as missing, a space as given.
REASONING_PLACEHOLDER = " "


def with_reasoning_placeholders(messages: Sequence[Message]) -> list[Message] | None:
    """The messages with a placeholder reasoning on every assistant message of a tool
    exchange (user message to next user message) that lacks one; None when none lacks it."""
    result = list(messages)
    changed = False
    start = 0
    for end in [*(i for i, m in enumerate(result) if m.role == "user"), len(result)]:
        exchange = range(start, end)
        assistants = [i for i in exchange if result[i].role == "assistant"]
        if any(result[i].tool_calls for i in assistants):
            for i in assistants:
                if not result[i].reasoning:
                    result[i] = replace(result[i], reasoning=REASONING_PLACEHOLDER, _json=None)
                    changed = True
        start = end
    return result if changed else None


def first_user_index_at_or_after(messages: Sequence[Message], start: int) -> int:
    """Index of the first user message at or after `start` (len(messages) if none): a cut
    there keeps a window that starts with a user message and has no orphan tool result."""
    for index in range(max(start, 0), len(messages)):
        if messages[index].role == "user":
            return index
    return len(messages)


def truncate_oldest_half(messages: Sequence[Message]) -> list[Message]:
    """Drop the oldest half, moving the cut forward to a user message (maybe leaving nothing)."""
    cut = first_user_index_at_or_after(messages, len(messages) // 2)
    return list(messages[cut:])
