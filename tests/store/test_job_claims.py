"""Two connections to one database running the same job at once, as two bot processes
would: a chat's review is claimed by one of them at a time (a claim left by a process that
died runs out and is taken over), and the retention cleanup and the memory purge delete and
count each row once (on PostgreSQL one process does a round while the other skips it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.backend import Backend
    from nonebot_plugin_aimemory.store.review_store import ReviewState, ReviewStore
    from tests.store.conftest import Opener

KEY = "g:1"
NOW = "2026-11-30T12:00:00.000000Z"
HELD_UNTIL = "2026-11-30T12:02:00.000000Z"
AFTER_IT = "2026-11-30T12:02:00.000001Z"
LATER_UNTIL = "2026-11-30T12:04:00.000001Z"
OLD = "2026-01-01T00:00:00.000000Z"
CUTOFF = "2026-06-01T00:00:00.000000Z"
EVERY_DELETION = "9999-01-01T00:00:00.000000Z"  # a purge cutoff after every deletion
ROWS = 60


@pytest.fixture
async def two_databases(open_backend: Opener) -> AsyncIterator[tuple[Backend, Backend]]:
    """Two connections to the test's database, one per process."""
    first, second = await open_backend(), await open_backend()
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


@pytest.fixture
def two_review_stores(two_databases: tuple[Backend, Backend]) -> tuple[ReviewStore, ReviewStore]:
    from nonebot_plugin_aimemory.store.review_store import ReviewStore

    return ReviewStore(two_databases[0]), ReviewStore(two_databases[1])


async def log_rows(database: Backend, *ids: int, at: str = NOW, key: str = KEY) -> None:
    await database.write(
        lambda connection: connection.executemany(
            "INSERT INTO chat_log (id, session_key, created_at, role, text) "
            "VALUES (?, ?, ?, 'user', '你好')",
            [(row_id, key, at) for row_id in ids],
        )
    )


async def pending_then_claimed_by_both(
    first: ReviewStore, second: ReviewStore
) -> tuple[ReviewState, list[str | None]]:
    """KEY marked pending, read once, then claimed by both processes at the same moment."""
    await first.mark_pending([KEY])
    seen = await first.get(KEY)
    claims = await asyncio.gather(
        first.claim_due(seen, NOW, HELD_UNTIL), second.claim_due(seen, NOW, HELD_UNTIL)
    )
    return seen, list(claims)


async def test_two_processes_claiming_a_pending_chat_at_once_get_it_once(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores

    _, claims = await pending_then_claimed_by_both(first, second)

    assert sum(claim is not None for claim in claims) == 1
    state = await second.get(KEY)
    assert (state.claimed, state.next_attempt_at, state.pending) == (True, HELD_UNTIL, True)


async def test_a_chat_reviewed_since_it_was_read_is_not_claimed_again(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores
    await log_rows(first.database, 1, 2, 3)
    await first.mark_pending([KEY])
    seen = await second.get(KEY)
    claimed = await first.claim_due(seen, NOW, HELD_UNTIL)
    assert claimed is not None
    await first.finish(KEY, NOW, 2, claim=HELD_UNTIL)  # row 3 still waits

    assert await second.claim_due(seen, AFTER_IT, LATER_UNTIL) is None
    assert (await second.get(KEY)).last_reviewed_row == 2


async def test_a_held_claim_is_not_taken_before_it_runs_out(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores
    await first.mark_pending([KEY])
    assert await first.claim(KEY, NOW, HELD_UNTIL) is not None

    by_tick = await second.claim_due(await second.get(KEY), NOW, LATER_UNTIL)
    by_hand = await second.claim(KEY, NOW, LATER_UNTIL)

    assert (by_tick, by_hand) == (None, None)


async def test_a_claim_left_by_a_process_that_died_is_taken_over_once_it_runs_out(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores
    await first.mark_pending([KEY])
    assert await first.claim(KEY, NOW, HELD_UNTIL) is not None  # and then it dies

    left = await second.pending()
    taken = await second.claim_due(left[0], AFTER_IT, LATER_UNTIL)

    assert [state.session_key for state in left] == [KEY]
    assert taken is not None
    assert taken.next_attempt_at == LATER_UNTIL


async def test_a_review_that_outlived_its_claim_leaves_the_new_holder_its_claim(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores
    await log_rows(first.database, 1, 2, 3)
    await first.mark_pending([KEY])
    assert await first.claim(KEY, NOW, HELD_UNTIL) is not None
    assert await second.claim(KEY, AFTER_IT, LATER_UNTIL) is not None

    renewed = await first.renew(KEY, HELD_UNTIL, LATER_UNTIL)
    await first.finish(KEY, AFTER_IT, 3, claim=HELD_UNTIL)
    await first.fail(KEY, 1, LATER_UNTIL, claim=HELD_UNTIL)

    state = await second.get(KEY)
    assert renewed is False
    assert (state.claimed, state.next_attempt_at, state.failures) == (True, LATER_UNTIL, 0)
    assert state.last_reviewed_row == 3  # the work done is kept all the same
    assert await first.claim(KEY, AFTER_IT, LATER_UNTIL) is None


async def test_a_failure_recorded_by_two_processes_is_counted_once(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores
    seen, claims = await pending_then_claimed_by_both(first, second)

    # Each records the failure it would have made; only the holder's counts.
    await asyncio.gather(
        *(
            store.fail(KEY, seen.failures + 1, LATER_UNTIL, claim=HELD_UNTIL)
            if claim is not None
            else asyncio.sleep(0)
            for store, claim in zip(two_review_stores, claims, strict=True)
        )
    )
    state = await first.get(KEY)

    assert (state.failures, state.claimed, state.next_attempt_at) == (1, False, LATER_UNTIL)


async def test_new_chat_during_a_review_keeps_the_claim_and_stays_pending_after_it(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores
    await log_rows(first.database, 1)
    await first.mark_pending([KEY])
    assert await first.claim(KEY, NOW, HELD_UNTIL) is not None

    await log_rows(second.database, 2)
    await second.mark_pending([KEY])
    while_held = await second.get(KEY)
    await first.finish(KEY, NOW, 1, claim=HELD_UNTIL)
    after = await second.get(KEY)

    assert (while_held.claimed, while_held.next_attempt_at) == (True, HELD_UNTIL)
    assert (after.claimed, after.pending, after.next_attempt_at) == (False, True, None)


async def test_a_review_by_hand_ignores_the_retry_wait_of_a_failed_one(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores
    await first.mark_pending([KEY])
    await first.fail(KEY, 2, LATER_UNTIL)

    by_tick = await second.claim_due(await second.get(KEY), NOW, HELD_UNTIL)
    by_hand = await second.claim(KEY, NOW, HELD_UNTIL)

    assert by_tick is None
    assert by_hand is not None
    assert by_hand.failures == 2


async def test_a_claim_handed_back_is_taken_at_once(
    two_review_stores: tuple[ReviewStore, ReviewStore],
) -> None:
    first, second = two_review_stores
    await first.mark_pending([KEY])
    assert await first.claim(KEY, NOW, HELD_UNTIL) is not None

    await first.release(KEY, HELD_UNTIL)

    assert await second.claim_due(await second.get(KEY), NOW, HELD_UNTIL) is not None


async def test_two_processes_purging_at_once_purge_each_memory_once(
    two_databases: tuple[Backend, Backend],
) -> None:
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore

    first, second = (MemoryStore(database) for database in two_databases)
    for n in range(ROWS):
        record = MemoryRecord(f"m{n}", f"记忆{n}", f"记忆{n}", created_at=OLD, updated_at=OLD)
        assert await first.insert(f"g:{n % 3}", record, cap=ROWS) == "inserted"
        await first.mark_deleted(f"g:{n % 3}", [record.id], tombstone=True)

    rounds = await asyncio.gather(
        *(store.purge_deleted(EVERY_DELETION) for store in (first, second, first))
    )

    purged = [pair for found in rounds for pair in found]
    assert len(purged) == len(set(purged)) == ROWS
    assert await first.database.read("SELECT COUNT(*) FROM memories") == [(0,)]
    assert await second.database.read("SELECT COUNT(*) FROM memory_tombstones") == [(ROWS,)]


async def test_two_processes_expiring_the_chat_log_at_once_count_each_row_once(
    two_databases: tuple[Backend, Backend],
) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow

    first, second = (ChatLogStore(database) for database in two_databases)
    await first.insert_many(
        [ChatRow(KEY, OLD if n % 2 else NOW, "user", f"第{n}句 吃火锅") for n in range(ROWS)]
    )

    removed = await asyncio.gather(
        *(store.delete_older_than(CUTOFF) for store in (first, second, second))
    )

    assert sum(removed) == ROWS // 2
    assert len(await second.recent(KEY, ROWS)) == ROWS // 2


@pytest.mark.parametrize("backend", ["postgresql"])
@pytest.mark.parametrize("job", ["CHAT_LOG_RETENTION", "MEMORY_PURGE"])
async def test_a_round_of_a_job_another_process_is_doing_is_skipped(
    any_database: Backend, postgres_url: str, job: str
) -> None:
    import psycopg

    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow
    from nonebot_plugin_aimemory.store.job_locks import JOB_LOCK_CLASS, Job
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore

    chat_log, memories = ChatLogStore(any_database), MemoryStore(any_database)
    await chat_log.insert_many([ChatRow(KEY, OLD, "user", "很久以前的话")])
    record = MemoryRecord("m1", "旧记忆", "旧记忆", created_at=OLD, updated_at=OLD)
    await memories.insert(KEY, record, cap=10)
    await memories.mark_deleted(KEY, ["m1"], tombstone=False)

    async def one_round() -> int:
        if job == "CHAT_LOG_RETENTION":
            return await chat_log.delete_older_than(CUTOFF)
        return len(await memories.purge_deleted(EVERY_DELETION))

    # Another process is in the middle of this job's round.
    connecting = psycopg.AsyncConnection.connect(postgres_url)
    async with await connecting as other, other.transaction():
        await other.execute("SELECT pg_advisory_xact_lock(%s, %s)", (JOB_LOCK_CLASS, int(Job[job])))
        skipped = await one_round()
    done = await one_round()

    assert (skipped, done) == (0, 1)
