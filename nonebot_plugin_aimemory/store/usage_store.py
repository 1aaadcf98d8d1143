"""Token usage per chat, per day and per role (`token_usage`): added to in batches by the
recorder (engine/usage.py), read by day range for `~对话 用量` and the panel. Without a
database the same figures live in memory until the bot stops."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..engine import NO_CHAT, TokenCounts, UsageRow
from .backend import Backend
from .connection import Connection

_ADD = """
INSERT INTO token_usage
    (chat_key, day, role, prompt_tokens, completion_tokens, cached_tokens, calls)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (chat_key, day, role) DO UPDATE SET
    prompt_tokens = token_usage.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = token_usage.completion_tokens + excluded.completion_tokens,
    cached_tokens = token_usage.cached_tokens + excluded.cached_tokens,
    calls = token_usage.calls + excluded.calls
"""
_SUMS = "SUM(prompt_tokens), SUM(completion_tokens), SUM(cached_tokens), SUM(calls)"


class UsageStore:
    """The `token_usage` table."""

    def __init__(self, database: Backend) -> None:
        self.database = database

    async def add(self, rows: Sequence[UsageRow]) -> None:
        """Add the rows' counts to the stored ones, in one transaction."""
        values = [
            (
                row.chat_key,
                row.day,
                row.role,
                row.counts.prompt_tokens,
                row.counts.completion_tokens,
                row.counts.cached_tokens,
                row.counts.calls,
            )
            for row in rows
        ]
        if not values:
            return

        def work(connection: Connection) -> None:
            connection.executemany(_ADD, values)

        await self.database.write(work)

    async def day_totals(self, day: str) -> dict[str, int]:
        """Total tokens of each chat that used any on `day`."""
        rows = await self.database.read(
            "SELECT chat_key, SUM(prompt_tokens + completion_tokens) FROM token_usage "
            "WHERE day = ? GROUP BY chat_key",
            (day,),
        )
        return {chat_key: int(total) for chat_key, total in rows}

    async def by_role(self, chat_key: str, first_day: str, last_day: str) -> dict[str, TokenCounts]:
        """One chat's counts in the range (both ends included), by role."""
        rows = await self.database.read(
            f"SELECT role, {_SUMS} FROM token_usage "
            "WHERE chat_key = ? AND day BETWEEN ? AND ? GROUP BY role",
            (chat_key, first_day, last_day),
        )
        return {role: _counts(sums) for role, *sums in rows}

    async def per_day(
        self, chat_key: str, first_day: str, last_day: str
    ) -> dict[str, dict[str, TokenCounts]]:
        """One chat's counts in the range, by day, then by role."""
        rows = await self.database.read(
            "SELECT day, role, prompt_tokens, completion_tokens, cached_tokens, calls "
            "FROM token_usage WHERE chat_key = ? AND day BETWEEN ? AND ? ORDER BY day, role",
            (chat_key, first_day, last_day),
        )
        days: dict[str, dict[str, TokenCounts]] = {}
        for day, role, *counts in rows:
            days.setdefault(day, {})[role] = _counts(counts)
        return days

    async def totals(self, first_day: str, last_day: str) -> dict[str, TokenCounts]:
        """Every chat's counts in the range added up, by role."""
        rows = await self.database.read(
            f"SELECT role, {_SUMS} FROM token_usage WHERE day BETWEEN ? AND ? GROUP BY role",
            (first_day, last_day),
        )
        return {role: _counts(sums) for role, *sums in rows}

    async def top_chats(
        self, first_day: str, last_day: str, limit: int
    ) -> list[tuple[str, TokenCounts]]:
        """The chats that used the most tokens in the range, most first."""
        rows = await self.database.read(
            f"SELECT chat_key, {_SUMS} FROM token_usage "
            "WHERE day BETWEEN ? AND ? AND chat_key != ? GROUP BY chat_key "
            "ORDER BY SUM(prompt_tokens + completion_tokens) DESC, chat_key LIMIT ?",
            (first_day, last_day, NO_CHAT, limit),
        )
        return [(chat_key, _counts(sums)) for chat_key, *sums in rows]


def _counts(values: Iterable[Any]) -> TokenCounts:
    prompt, completion, cached, calls = (int(v or 0) for v in values)
    return TokenCounts(prompt, completion, cached, calls)


class MemoryOnlyUsageStore:
    """No database: the same figures, in memory until the bot stops."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, str], TokenCounts] = {}

    async def add(self, rows: Sequence[UsageRow]) -> None:
        """Add the rows' counts to the kept ones."""
        for row in rows:
            key = (row.chat_key, row.day, row.role)
            self._rows[key] = self._rows.get(key, TokenCounts()) + row.counts

    async def day_totals(self, day: str) -> dict[str, int]:
        """Total tokens of each chat that used any on `day`."""
        totals: dict[str, int] = {}
        for (chat_key, on, _), counts in self._rows.items():
            if on == day:
                totals[chat_key] = totals.get(chat_key, 0) + counts.total_tokens
        return totals

    async def by_role(self, chat_key: str, first_day: str, last_day: str) -> dict[str, TokenCounts]:
        """One chat's counts in the range, by role."""
        found: dict[str, TokenCounts] = {}
        for (chat, day, role), counts in self._rows.items():
            if chat == chat_key and first_day <= day <= last_day:
                found[role] = found.get(role, TokenCounts()) + counts
        return found

    async def per_day(
        self, chat_key: str, first_day: str, last_day: str
    ) -> dict[str, dict[str, TokenCounts]]:
        """One chat's counts in the range, by day, then by role."""
        days: dict[str, dict[str, TokenCounts]] = {}
        for (chat, day, role), counts in sorted(self._rows.items(), key=lambda item: item[0]):
            if chat == chat_key and first_day <= day <= last_day:
                days.setdefault(day, {})[role] = counts
        return days

    async def totals(self, first_day: str, last_day: str) -> dict[str, TokenCounts]:
        """Every chat's counts in the range added up, by role."""
        found: dict[str, TokenCounts] = {}
        for (_, day, role), counts in self._rows.items():
            if first_day <= day <= last_day:
                found[role] = found.get(role, TokenCounts()) + counts
        return found

    async def top_chats(
        self, first_day: str, last_day: str, limit: int
    ) -> list[tuple[str, TokenCounts]]:
        """The chats that used the most tokens in the range, most first."""
        chats: dict[str, TokenCounts] = {}
        for (chat, day, _), counts in self._rows.items():
            if chat != NO_CHAT and first_day <= day <= last_day:
                chats[chat] = chats.get(chat, TokenCounts()) + counts
        ranked = sorted(chats.items(), key=lambda pair: (-pair[1].total_tokens, pair[0]))
        return ranked[:limit]
