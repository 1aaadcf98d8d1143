"""Token usage of every model call, per chat, per day and per role. The clients report what
the API said (`UsageRecorder.record`); which chat a call is for comes from a context
variable set by whoever starts work for a chat (a turn, a review, an extraction), as the
clients cannot know. The recorder adds the figures up in memory and writes them in one
transaction every few seconds and at shutdown: never a write per call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Protocol

from .background import Background
from .turn_context import usage_chat as _chat

logger = logging.getLogger("nonebot_plugin_aimemory")

# The roles usage is counted under, in the order reports list them.
ROLES = ("main", "compressor", "reviewer", "extractor", "guard", "vision", "embeddings")
# The chat of calls made for none: background work over many chats (chat-log vectors, a
# vector backfill), and anything outside a turn, a review or an extraction.
NO_CHAT = ""
FLUSH_SECONDS = 5.0

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported by the API for one or more calls; `cached_tokens` of the prompt
    tokens were served from the provider's prompt cache (0 when it does not say)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )


@dataclass(frozen=True, slots=True)
class TokenCounts:
    """Tokens and calls added up: prompt tokens (of which `cached_tokens` were served from
    the provider's prompt cache), completion tokens, and how many calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together (what the daily quota counts)."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            self.calls + other.calls,
        )


def summed(counts: Iterable[TokenCounts]) -> TokenCounts:
    """All the counts added together."""
    total = TokenCounts()
    for each in counts:
        total += each
    return total


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One chat's usage by one role on one day (`YYYY-MM-DD` in the configured zone)."""

    day: str
    chat_key: str
    role: str
    counts: TokenCounts


class UsageLedger(Protocol):
    """Where usage is kept (store/usage_store.py): added to in batches, read by day range.
    Days are `YYYY-MM-DD`; ranges include both ends."""

    async def add(self, rows: Sequence[UsageRow]) -> None:
        """Add the rows' counts to what is kept, in one transaction."""
        ...

    async def day_totals(self, day: str) -> dict[str, int]:
        """Total tokens of each chat that used any on `day`."""
        ...

    async def by_role(self, chat_key: str, first_day: str, last_day: str) -> dict[str, TokenCounts]:
        """One chat's counts in the range, by role."""
        ...

    async def per_day(
        self, chat_key: str, first_day: str, last_day: str
    ) -> dict[str, dict[str, TokenCounts]]:
        """One chat's counts in the range, by day, then by role (days without use left out)."""
        ...

    async def totals(self, first_day: str, last_day: str) -> dict[str, TokenCounts]:
        """Every chat's counts in the range added up (NO_CHAT's too), by role."""
        ...

    async def top_chats(
        self, first_day: str, last_day: str, limit: int
    ) -> list[tuple[str, TokenCounts]]:
        """The chats that used the most tokens in the range, most first (not NO_CHAT)."""
        ...


class UsageMeter(Protocol):
    """What a model client reports its calls' usage to."""

    def record(self, role: str, usage: Usage | None) -> None:
        """One call of `role` made for the current chat; `usage` as the API reported it
        (None: it reported none, the call still counts)."""
        ...


class NoMeter:
    """Usage counted nowhere (clients built outside a Runtime: tests, benches)."""

    def record(self, role: str, usage: Usage | None) -> None:
        """Nothing is counted."""


NO_METER = NoMeter()


def current_chat() -> str | None:
    """The chat the model calls made here are counted for, or None."""
    return _chat.get()


@contextmanager
def attributed_to(chat_key: str | None) -> Iterator[None]:
    """Count the model calls of the enclosed code (and of tasks started in it) for
    `chat_key`; None counts them for no chat (work that serves many)."""
    token = _chat.set(chat_key)
    try:
        yield
    finally:
        _chat.reset(token)


class UsageRecorder:
    """Adds up usage in memory, keyed by (day, chat, role), and writes it to the ledger
    every `flush_seconds` and at close. Today's total of each chat is kept in memory too
    (loaded at start), so the quota check never queries. Reads flush first, so what a
    report shows includes the last few seconds."""

    def __init__(
        self,
        ledger: UsageLedger,
        *,
        zone: tzinfo,
        flush_seconds: float = FLUSH_SECONDS,
        clock: Clock = _utc_now,
    ) -> None:
        self.ledger = ledger
        self.zone = zone
        self.flush_seconds = flush_seconds
        self.clock = clock
        self._pending: dict[tuple[str, str, str], TokenCounts] = {}
        self._today_day = ""
        self._today: dict[str, int] = {}
        self._flushing = asyncio.Lock()
        self._background = Background("token usage")

    def today(self) -> str:
        """The current day in the configured zone, as `YYYY-MM-DD`."""
        return self.clock().astimezone(self.zone).date().isoformat()

    def days_before(self, day: str, days: int) -> str:
        """The day `days` days before `day`."""
        return (date.fromisoformat(day) - timedelta(days=days)).isoformat()

    def record(self, role: str, usage: Usage | None) -> None:
        """Count one call of `role` for the current chat (never awaits, never writes)."""
        chat = _chat.get() or NO_CHAT
        counts = (
            TokenCounts(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens, 1)
            if usage is not None
            else TokenCounts(calls=1)
        )
        day = self.today()
        key = (day, chat, role)
        self._pending[key] = self._pending.get(key, TokenCounts()) + counts
        self._roll_over(day)
        self._today[chat] = self._today.get(chat, 0) + counts.total_tokens

    def today_total(self, chat_key: str) -> int:
        """The tokens `chat_key` used today, recorded ones not yet written included."""
        self._roll_over(self.today())
        return self._today.get(chat_key, 0)

    def today_totals(self) -> dict[str, int]:
        """Today's tokens of every chat that used any (from memory, no query)."""
        self._roll_over(self.today())
        return dict(self._today)

    def _roll_over(self, day: str) -> None:
        """A new day starts every chat's daily total at zero."""
        if day != self._today_day:
            self._today_day = day
            self._today = {}

    async def load(self) -> None:
        """Read today's totals (what was used before a restart still counts)."""
        day = self.today()
        try:
            stored = await self.ledger.day_totals(day)
        except Exception:
            logger.exception("could not read today's token usage; counting from zero")
            return
        self._roll_over(day)
        for chat, tokens in stored.items():
            self._today[chat] = self._today.get(chat, 0) + tokens

    def start(self) -> None:
        """Write what was recorded every `flush_seconds`."""
        self._background.every(self.flush_seconds, self.flush, name="flush")

    async def flush(self) -> bool:
        """Write everything recorded so far in one transaction; False (logged) when that
        failed: the figures then stay in memory for the next flush."""
        async with self._flushing:
            if not self._pending:
                return True
            batch, self._pending = self._pending, {}
            rows = [UsageRow(day, chat, role, c) for (day, chat, role), c in batch.items()]
            try:
                await self.ledger.add(rows)
            except Exception:
                logger.exception("could not write %d token usage rows; will retry", len(rows))
                for key, counts in batch.items():
                    self._pending[key] = counts + self._pending.get(key, TokenCounts())
                return False
            return True

    async def close(self) -> None:
        """Stop the periodic flush and write what is left (the database closes after)."""
        await self._background.close(cancel=True)
        if not await self.flush():
            logger.error(
                "token usage lost at shutdown: %d (day, chat, role) rows", len(self._pending)
            )

    async def by_role(self, chat_key: str, first_day: str, last_day: str) -> dict[str, TokenCounts]:
        """One chat's usage in the range, by role."""
        await self.flush()
        return await self.ledger.by_role(chat_key, first_day, last_day)

    async def per_day(self, chat_key: str, days: int) -> list[tuple[str, dict[str, TokenCounts]]]:
        """One chat's usage on each of the last `days` days (today last), by role; a day
        without use has an empty mapping."""
        await self.flush()
        last = self.today()
        first = self.days_before(last, days - 1)
        found = await self.ledger.per_day(chat_key, first, last)
        return [
            (day, found.get(day, {}))
            for day in (self.days_before(last, back) for back in range(days - 1, -1, -1))
        ]

    async def totals(self, first_day: str, last_day: str) -> dict[str, TokenCounts]:
        """All chats' usage in the range, by role."""
        await self.flush()
        return await self.ledger.totals(first_day, last_day)

    async def top_chats(
        self, first_day: str, last_day: str, limit: int
    ) -> list[tuple[str, TokenCounts]]:
        """The chats that used the most tokens in the range."""
        await self.flush()
        return await self.ledger.top_chats(first_day, last_day, limit)


def in_role_order(by_role: Mapping[str, TokenCounts]) -> list[tuple[str, TokenCounts]]:
    """The roles of a report in ROLES order, any other role after them."""
    known = [(role, by_role[role]) for role in ROLES if role in by_role]
    others = sorted((pair for pair in by_role.items() if pair[0] not in ROLES), key=_role_name)
    return known + others


def _role_name(pair: tuple[str, TokenCounts]) -> str:
    return pair[0]
