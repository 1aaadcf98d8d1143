"""What a local model server's prompt cache holds, and how to fill it again. A server of
this machine (llama.cpp, Ollama) with one slot keeps the prompt of its last request only:
a review or an extraction between two of a member's turns makes the next turn read its
whole prompt again (1 500 tokens took 23 s with a 1.5B model on two CPU cores; cached, the
same request took 0.3 s). So after background calls, in the next lull, the last request a
member waited for is sent again asking for one token (`LLMClient._warm`), and the next turn reads
only what is new. Only when the last two such requests opened alike (the same system
prompt): requests of a chat with a persona of its own share little with another chat's,
and that chat's member would wait for a warm-up of no use to them (llama.cpp reads a prompt
to its end even when the caller hangs up). Two chats of one persona share their opening,
the system prompt and the tools, most of a prompt on a small budget: a warm-up of either
serves both. Not the window: on a small budget it slides every turn."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from .messages import Message


@dataclass(frozen=True)
class Warmup:
    """A member's answered request, as the way to put its prompt back in the cache."""

    opening: bytes  # a digest of the system prompt it opens with
    send: Callable[[], Awaitable[None]]


def opening_of(messages: Sequence[Message]) -> bytes:
    """A digest of the message a request opens with, its system prompt."""
    opening = messages[0].api_json() if messages else b""
    return hashlib.blake2b(opening, digest_size=16).digest()


@dataclass
class ServerCache:
    """One local server's cache as the plugin believes it: the last member request it
    answered, whether the one before opened alike, and whether a background call has
    pushed it out since."""

    last: Warmup | None = None
    opened_alike: bool = False
    holds_last: bool = True

    def answered(self, warmup: Warmup) -> None:
        """A member's request was answered: the cache holds its prompt now."""
        previous, self.last = self.last, warmup
        self.opened_alike = previous is not None and previous.opening == warmup.opening
        self.holds_last = True

    def evicted(self) -> None:
        """A background call ran on the server: its prompt took the cache's place."""
        self.holds_last = False

    def due(self) -> Warmup | None:
        """The request to send again, if the cache lost one worth having back."""
        if self.last is None or self.holds_last or not self.opened_alike:
            return None
        return self.last

    def warmed(self, warmup: Warmup) -> None:
        """`warmup` was sent again in full: the cache holds it (unless a newer one came)."""
        if self.last is warmup:
            self.holds_last = True
