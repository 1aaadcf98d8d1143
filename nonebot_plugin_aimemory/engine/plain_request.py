"""The turn's last request (AnswerMode.NO_TOOLS), with no tool call in sight: its tool
results told as text before the member's message. Shown its own calls in the history with
no tools offered, a small model writes one more as JSON text instead of answering (seen
with Qwen2.5-Coder-1.5B on llama.cpp's server, issue #36); told the results after the
message, it said them back ("我刚才调用工具得到的结果…"): it answers what it reads last,
so the message comes last, as it does after injected notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .messages import Message
from .window import api_safe


@dataclass(frozen=True, slots=True)
class ResultsFraming:
    """The lines around the told results (`closing` left out when the message already
    has it, after its injected notes) and the note asking for an answer in words, which
    goes after the message instead of after the last result."""

    opening: str = ""
    closing: str = ""
    answer_note: str = ""


def plain_request(
    history: Sequence[Message],
    message: Message,
    pending: Sequence[Message],
    framing: ResultsFraming,
) -> list[Message]:
    """`history` and the member's `message` without tool calls and results; the turn's
    results (`pending`'s) before the message. What an assistant said beside its calls
    stays."""
    results = [m for m in pending if m.role == "tool"]
    asked = message
    if results:
        note = f"\n{framing.answer_note}" if framing.answer_note else ""
        told = [f"- {m.name or '工具'}：{m.text.removesuffix(note)}" for m in results]
        closing = "" if framing.closing in message.text else framing.closing
        block = "\n".join(line for line in (framing.opening, *told, closing) if line) + "\n"
        asked = message.with_prefix(block)
        if note and not asked.text.endswith(note):
            asked = asked.with_note(framing.answer_note)
    return api_safe([*without_tool_exchanges(history), asked])


def without_tool_exchanges(messages: Sequence[Message]) -> list[Message]:
    """`messages` as a plain chat: tool results dropped, and calls taken off the assistant
    messages that made them (one that said nothing beside them is dropped)."""
    plain: list[Message] = []
    for message in messages:
        if message.role == "tool":
            continue
        if message.tool_calls:
            if not message.text:
                continue
            message = replace(message, tool_calls=(), _json=None, tokens=-1)
        plain.append(message)
    return plain
