"""Fixtures of the chat-log and memory-review tests: a fake reviewer model, a clock the
scheduler reads, and the bare chat-log store on each backend, `any_chat_store`, with the
backend fixtures it stands on (tests/store/conftest.py; the SQLite-only `chat_store` is in
tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.chatlog.helpers import FakeClock, FakeReviewer
from tests.store.conftest import (  # the fixtures, shared with the store tests
    any_chat_store,
    any_database,
    backend,
    db_path,
    open_backend,
)

__all__ = ["any_chat_store", "any_database", "backend", "db_path", "open_backend"]


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
