"""The messages of a turn's next request, after the system prompt: the window and the
turn's messages as every API accepts them; once the model answered with fewer choices,
a plain chat (plain_request.py); and once an answer repeated an earlier reply, the window
without the exchanges whose replies it repeated. A small model copies the shapes it sees
("已记。" to every message once a few were in its window, issue #36): asked again with
them in sight, it copies them again."""

from __future__ import annotations

from collections.abc import Sequence

from .messages import Message
from .plain_request import ResultsFraming, plain_request
from .stock_replies import same_reply
from .turn_outcome import AnswerMode, TurnProgress
from .window import Window, api_safe


def turn_request(
    window: Window,
    message: Message,
    pending: Sequence[Message],
    progress: TurnProgress,
    framing: ResultsFraming,
) -> list[Message]:
    """What the next request of the turn sends after its system prompt."""
    if progress.mode is AnswerMode.NO_TOOLS:
        history = without_replies_like(window.messages, progress.repeated)
        return plain_request(history, message, pending, framing)
    if progress.repeated:
        history = without_replies_like(window.messages, progress.repeated)
        return api_safe([*history, message, *pending])
    return window.api_safe_with([message, *pending])


def without_replies_like(messages: Sequence[Message], reply: str) -> list[Message]:
    """`messages` without the exchanges (a member's message and what answered it) whose
    reply says what `reply` says; all of them when `reply` is empty. Whole exchanges: the
    members' messages left without their replies would run together into one list, which
    a small model read as lines to write down ("记忆保存：阿强，20002：学吉他难吗？")."""
    if not reply:
        return list(messages)
    kept: list[Message] = []
    for exchange in _exchanges(messages):
        if not any(_says(m, reply) for m in exchange):
            kept += exchange
    return kept


def _exchanges(messages: Sequence[Message]) -> list[list[Message]]:
    """`messages` cut before each user message that follows another role."""
    exchanges: list[list[Message]] = []
    for message in messages:
        if not exchanges or (message.role == "user" and exchanges[-1][-1].role != "user"):
            exchanges.append([])
        exchanges[-1].append(message)
    return exchanges


def _says(message: Message, reply: str) -> bool:
    """Whether `message` is a reply of the model saying what `reply` says."""
    return (
        message.role == "assistant" and not message.tool_calls and same_reply(message.text, reply)
    )
