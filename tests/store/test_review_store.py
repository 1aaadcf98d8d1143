"""The reviewer's per-session state on both backends: defaults, switches that survive a
restart, the pending flag, and a review mark that never moves back."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.review_store import ReviewStore
    from tests.store.conftest import Opener

AT = "2024-05-01T08:00:00.000000Z"
LATER = "2024-05-01T09:00:00.000000Z"


@pytest.fixture
async def reviews(any_database) -> ReviewStore:
    from nonebot_plugin_aimemory.store.review_store import ReviewStore

    return ReviewStore(any_database)


async def log_rows(store: ReviewStore, session_key: str, *ids: int) -> None:
    """Chat-log rows of a session, by id."""
    await store.database.write(
        lambda connection: connection.executemany(
            "INSERT INTO chat_log (id, session_key, created_at, role, text) "
            "VALUES (?, ?, ?, 'user', '你好')",
            [(row_id, session_key, AT) for row_id in ids],
        )
    )


async def test_a_session_never_reviewed_has_the_defaults(reviews: ReviewStore) -> None:
    from nonebot_plugin_aimemory.store.review_store import ReviewState

    assert await reviews.get("g:1") == ReviewState("g:1")
    assert await reviews.pending() == []


async def test_switches_and_pending_sessions_survive_a_restart(open_backend: Opener) -> None:
    from nonebot_plugin_aimemory.store.review_store import ReviewStore

    database = await open_backend()
    try:
        store = ReviewStore(database)
        await store.set_enabled("g:1", False)
        await store.set_interval("g:1", 3600)
        await store.mark_pending(["g:1", "f:2", "g:1"])
    finally:
        await database.close()

    database = await open_backend()
    try:
        store = ReviewStore(database)
        state = await store.get("g:1")
        pending = [s.session_key for s in await store.pending()]
    finally:
        await database.close()

    assert (state.enabled, state.interval_seconds, state.pending) == (False, 3600, True)
    assert pending == ["f:2", "g:1"]


async def test_a_finished_review_stays_pending_only_for_rows_after_it(
    reviews: ReviewStore,
) -> None:
    await log_rows(reviews, "g:1", 1, 2, 3)
    await log_rows(reviews, "g:2", 4)
    await reviews.mark_pending(["g:1", "g:2"])

    await reviews.finish("g:1", AT, 2)
    await reviews.finish("g:2", AT, 4)

    first, second = await reviews.get("g:1"), await reviews.get("g:2")
    assert (first.pending, first.last_reviewed_row, first.last_review_at) == (True, 2, AT)
    assert (second.pending, second.last_reviewed_row) == (False, 4)
    assert [s.session_key for s in await reviews.pending()] == ["g:1"]


async def test_a_review_never_moves_the_mark_back(reviews: ReviewStore) -> None:
    await reviews.finish("g:1", AT, 9)

    await reviews.finish("g:1", LATER, 5)

    state = await reviews.get("g:1")
    assert (state.last_reviewed_row, state.last_review_at) == (9, LATER)


async def test_a_failure_is_recorded_and_a_success_clears_it(reviews: ReviewStore) -> None:
    await reviews.mark_pending(["g:1"])

    await reviews.fail("g:1", 2, LATER)
    failed = await reviews.get("g:1")
    await reviews.finish("g:1", LATER, 0)
    recovered = await reviews.get("g:1")

    assert (failed.failures, failed.next_attempt_at) == (2, LATER)
    assert (recovered.failures, recovered.next_attempt_at) == (0, None)
