"""The turn's last request (AnswerMode.NO_TOOLS), with no tool call in sight: its tool
results told as text after the member's message. Shown its own calls in the history with
no tools offered, a small model writes one more as JSON text instead of answering (seen
with Qwen2.5-Coder-1.5B on llama.cpp's server, issue #36); a plain chat gets an answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .messages import Message
from .window import api_safe


def plain_request(
    history: Sequence[Message], message: Message, pending: Sequence[Message], opening: str
) -> list[Message]:
    """`history` and the member's `message` without tool calls and results; the turn's
    results (`pending`'s, the answer note on the last one) after the message, under
    `opening`. What an assistant said beside its calls stays."""
    results = [m for m in pending if m.role == "tool"]
    asked = message
    if results:
        told = "\n".join(f"- {m.name or '工具'}：{m.text}" for m in results)
        asked = message.with_note(f"\n{opening}\n{told}")
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
