"""One speaker's quick messages answered together. People split one thought over several
messages; what the same person sends while a turn of the chat runs joins one *burst*, which
the next turn answers as one user message: one answer, as they expect, and one model call
instead of many. A burst is open until its turn starts, and each speaker has at most one
open burst per chat; bursts queue in the order they opened, so speakers take turns
round-robin: another member waits for at most one turn per other speaker. A burst's turn
is its speaker's work in the session queue: `~对话 停止` may drop it (sessions.py)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from .incoming import Incoming, Outcome, nothing

# What one turn answers of a burst; what a flood sends beyond that is logged, not answered.
MAX_BURST_MESSAGES = 10
MAX_BURST_CHARS = 4000


@dataclass(eq=False)
class Burst:
    """Messages of one speaker in one chat waiting for the same turn. Each message's
    handler waits on its own future; the last message's gets the turn's outcome (the reply
    follows the newest message), the others nothing."""

    key: str
    speaker_id: str
    messages: list[Incoming] = field(default_factory=list)
    waiters: list[asyncio.Future[Outcome]] = field(default_factory=list)
    chars: int = 0
    overflowed: bool = False
    started: bool = False
    dropped: bool = False

    @property
    def message_count(self) -> int:
        """How many messages its turn answers."""
        return len(self.messages)

    def drop(self) -> None:
        """Its turn was dropped (`~对话 停止`): a new message opens a new burst."""
        self.dropped = True

    def has_room_for(self, chars: int) -> bool:
        """Whether one more message of `chars` characters fits this burst's turn (the first
        message always does; after one message was turned away, none does)."""
        if self.overflowed or len(self.messages) >= MAX_BURST_MESSAGES:
            return False
        return not self.messages or self.chars + chars <= MAX_BURST_CHARS

    def add(self, incoming: Incoming, chars: int) -> asyncio.Future[Outcome]:
        """Add a message; the future is what its handler will send."""
        waiter: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self.messages.append(incoming)
        self.waiters.append(waiter)
        self.chars += chars
        return waiter

    def start(self) -> list[Incoming]:
        """The turn takes the burst: nothing joins it any more, and every handler but the
        last one's is done (with nothing to send)."""
        self.started = True
        for waiter in self.waiters[:-1]:
            _resolve(waiter, nothing())
        return list(self.messages)

    def answer(self, outcome: Outcome) -> None:
        """Hand the turn's outcome to the newest message's handler."""
        if self.waiters:
            _resolve(self.waiters[-1], outcome)

    def settle(self) -> None:
        """Whatever happened, no handler is left waiting."""
        for waiter in self.waiters:
            _resolve(waiter, nothing())


class OpenBursts:
    """The open burst of each speaker in each chat."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], Burst] = {}

    def __len__(self) -> int:
        return len(self._open)

    def find(self, key: str, speaker_id: str) -> Burst | None:
        """The speaker's burst that has not started yet (nor was dropped), if any."""
        burst = self._open.get((key, speaker_id))
        return burst if burst is not None and not burst.dropped else None

    def open(self, key: str, speaker_id: str) -> Burst:
        """A new burst for the speaker; the caller queues its turn next, as the burst's."""
        burst = Burst(key, speaker_id)
        self._open[(key, speaker_id)] = burst
        return burst

    def close(self, burst: Burst) -> None:
        """The burst takes no more messages (its turn started, or it was dropped)."""
        if self._open.get((burst.key, burst.speaker_id)) is burst:
            del self._open[(burst.key, burst.speaker_id)]


def _resolve(waiter: asyncio.Future[Outcome], outcome: Outcome) -> None:
    if not waiter.done():
        waiter.set_result(outcome)
