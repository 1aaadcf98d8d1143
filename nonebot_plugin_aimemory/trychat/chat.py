"""One message of the try page through the very conversation QQ messages go through (the
same turn, provider, memory, commands, quotas and notices), and what the page shows of
the answer: the texts as QQ would send them (cleaned and split as onebot/outbound.py does)
and what the turn did (engine/turn_trace.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass, field

from ..conversation import Conversation, Outcome
from ..engine import TurnTrace
from ..onebot.outbound import plain_for_qq, split_reply
from .inbound import PageMessage, read_message


@dataclass(frozen=True, slots=True)
class PageAnswer:
    """What the page shows after a message: the bot's messages in order (none: it does
    not answer this one), whether they are the model's words, whether the message was for
    the bot (or a command), how much of a long paste was left out, and the turn's trace."""

    texts: list[str]
    from_model: bool
    addressed: bool
    command: bool
    cut_chars: int
    trace: TurnTrace = field(default_factory=TurnTrace)


class TryChat:
    """Sends the try page's messages into the conversation, as the OneBot matcher sends
    QQ's: `max_chars` and `max_parts` are the replies' limits in QQ, `nicknames` NoneBot's."""

    def __init__(
        self,
        conversation: Conversation,
        *,
        max_chars: int,
        max_parts: int,
        nicknames: Collection[str],
    ) -> None:
        self.conversation = conversation
        self.max_chars = max_chars
        self.max_parts = max_parts
        self.nicknames = frozenset(nicknames)

    async def send(self, message: PageMessage) -> PageAnswer:
        """Answer one message. A page that goes away meanwhile (its request cancelled) does
        not hold up the chat: the answer is taken as delivered when it comes."""
        trace = TurnTrace()
        read = read_message(message, nicknames=self.nicknames, trace=trace)
        answering = asyncio.ensure_future(self.conversation.answer(read.incoming))
        try:
            outcome = await asyncio.shield(answering)
        except asyncio.CancelledError:
            answering.add_done_callback(_delivered_when_done)
            raise
        try:
            texts = self._as_sent(outcome)
        finally:
            # The turn keeps its session until its reply is out, as in QQ.
            outcome.mark_delivered()
        incoming = read.incoming
        return PageAnswer(
            texts=texts,
            from_model=outcome.from_model,
            addressed=incoming.addressed,
            command=incoming.command is not None,
            cut_chars=read.cut_chars,
            trace=trace,
        )

    def _as_sent(self, outcome: Outcome) -> list[str]:
        """The outcome's texts as the QQ messages they would be."""
        if not outcome.from_model:
            return list(outcome.texts)
        return [
            piece
            for text in outcome.texts
            for piece in split_reply(
                plain_for_qq(text), max_chars=self.max_chars, max_parts=self.max_parts
            )
        ]


def _delivered_when_done(answering: asyncio.Future[Outcome]) -> None:
    """Let the chat go on once the answer nobody waits for any more is ready."""
    if not answering.cancelled() and answering.exception() is None:
        answering.result().mark_delivered()
