"""A hybrid chat-log search (chatlog/search.py) asks for the query's vector while its
keywords are ranked, so it waits for the slower of the two rather than for both; a query
of only stopwords still finds nothing, and its vector is not waited for."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

WAIT_SECONDS = 2.0


@dataclass
class Index:
    """A keyword index whose ranking ends only once the query's vector was asked for."""

    asked: asyncio.Event
    words: bool = True

    async def ranking(self, *args: Any, **kwargs: Any) -> Any:
        from nonebot_plugin_aimemory.store.chat_log_index import KeywordRanking

        await asyncio.wait_for(self.asked.wait(), WAIT_SECONDS)
        if not self.words:
            return KeywordRanking([], [])
        return KeywordRanking([(1, 2.0)], [], term_rows=(1,))

    async def logged_rows(self) -> int:
        return 10


@dataclass
class Store:
    """The chat log's rows: row 1 of session `f:1`."""

    index: Index

    async def rows_by_id(self, ids: Sequence[int]) -> list[Any]:
        from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

        return [ChatRow("f:1", "2026-12-06 10:00:00", "user", "火锅", id=1) for _ in ids[:1]]


@dataclass
class Vectors:
    """Row vectors on; the query's vector takes a while, as a server over the network."""

    asked: asyncio.Event
    answered: list[str] = field(default_factory=list)
    enabled: bool = True

    async def query_vector(self, text: str) -> list[float] | None:
        self.asked.set()
        await asyncio.sleep(0.05)
        self.answered.append(text)
        return [1.0, 0.0]

    async def ranking(self, *args: Any) -> list[tuple[int, float]]:
        return [(1, 0.9)]

    def forget(self, session_key: str, row_ids: Any) -> None:
        """Nothing is gone."""


async def test_the_query_vector_is_asked_for_while_the_keywords_are_ranked() -> None:
    from nonebot_plugin_aimemory.chatlog.search import search_rows

    asked = asyncio.Event()
    vectors = Vectors(asked)

    rows = await search_rows(Store(Index(asked)), vectors, "f:1", "火锅", 10)  # type: ignore[arg-type]

    assert [row.id for row in rows] == [1]
    assert vectors.answered == ["火锅"]


async def test_a_query_of_only_stopwords_does_not_wait_for_its_vector() -> None:
    from nonebot_plugin_aimemory.chatlog.search import search_rows

    asked = asyncio.Event()
    vectors = Vectors(asked)

    rows = await search_rows(Store(Index(asked, words=False)), vectors, "f:1", "的了", 10)  # type: ignore[arg-type]

    assert rows == []
    assert vectors.answered == []
