"""The messages of a turn's next request, after the system prompt: the window and the
turn's messages as every API accepts them; once the model answered with fewer choices,
a plain chat (plain_request.py); and once an answer repeated an earlier reply, the window
without the replies it repeated. A small model copies the shapes it sees ("已记。" to
every message once a few were in its window, issue #36): asked again with them in sight,
it copies them again."""

from __future__ import annotations

from collections.abc import Sequence

from .messages import Message
from .plain_request import plain_request
from .stock_replies import same_reply
from .turn_outcome import AnswerMode, TurnProgress
from .window import Window, api_safe


def turn_request(
    window: Window,
    message: Message,
    pending: Sequence[Message],
    progress: TurnProgress,
    results_opening: str,
) -> list[Message]:
    """What the next request of the turn sends after its system prompt."""
    if progress.mode is AnswerMode.NO_TOOLS:
        history = without_replies_like(window.messages, progress.repeated)
        return plain_request(history, message, pending, results_opening)
    if progress.repeated:
        history = without_replies_like(window.messages, progress.repeated)
        return api_safe([*history, message, *pending])
    return window.api_safe_with([message, *pending])


def without_replies_like(messages: Sequence[Message], reply: str) -> list[Message]:
    """`messages` without the assistant replies that say what `reply` says (all of them
    when `reply` is empty); the member's messages around one are merged by `api_safe`."""
    if not reply:
        return list(messages)
    return [
        m
        for m in messages
        if not (m.role == "assistant" and not m.tool_calls and same_reply(m.text, reply))
    ]
