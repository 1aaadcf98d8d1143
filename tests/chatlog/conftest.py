"""Fixtures of the chat-log and memory-review tests: a fake reviewer model, a clock the
scheduler reads, and a bare chat-log store on a real SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from tests.chatlog.helpers import FakeClock, FakeReviewer

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore


@pytest.fixture
def reviewer(plugin) -> FakeReviewer:
    """Both models at once: review requests get scripted answers, chat gets 好的."""
    fake = FakeReviewer()
    plugin.llm.responder = fake
    return fake


@pytest.fixture
def clock(plugin) -> FakeClock:
    """The review scheduler's clock, moved by hand (re-install it after a restart)."""
    fake = FakeClock()
    plugin.runtime.chat_log.reviews.clock = fake
    return fake


@pytest.fixture
async def chat_store(tmp_path) -> AsyncIterator[ChatLogStore]:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.database import Database
    from nonebot_plugin_aimemory.text import segmenter

    segmenter.initialise()
    database = await Database.open(tmp_path / "chat_log.db")
    yield ChatLogStore(database)
    await database.close()
