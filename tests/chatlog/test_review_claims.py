"""Two bot processes reviewing the chat of one database, each with its own connection and
its own review scheduler: a pending chat is reviewed by one of them, a review asked for by
hand waits for the other's, a failure counts once, and a chat whose claim ran out (its
process hung or died) or was handed back at shutdown is reviewed by the other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import pytest

from tests.chatlog.helpers import FakeClock

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.chatlog.reviewer import MemoryReviewer, ReviewOutcome
    from nonebot_plugin_aimemory.chatlog.scheduler import ReviewScheduler
    from nonebot_plugin_aimemory.store.backend import Backend
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.review_store import ReviewState
    from tests.store.conftest import Opener

KEY = "g:1"
LOGGED_AT = "2026-11-30T11:00:00.000000Z"


@dataclass
class ModelCalls:
    """The review model both processes call: who asked, from which row, how many at once."""

    calls: list[tuple[str, int]] = field(default_factory=list)
    running: int = 0
    most_at_once: int = 0
    failing: bool = False


@dataclass
class GatedReviewer:
    """A reviewer whose model answers once `gate` is open; it reviews every row shown."""

    name: str
    chat_log: ChatLogStore
    model: ModelCalls
    gate: asyncio.Event = field(default_factory=asyncio.Event)

    async def review(self, scope: str, after_row: int) -> ReviewOutcome:
        from nonebot_plugin_aimemory.chatlog.reviewer import ReviewOutcome

        self.model.calls.append((self.name, after_row))
        self.model.running += 1
        self.model.most_at_once = max(self.model.most_at_once, self.model.running)
        try:
            await self.gate.wait()
        finally:
            self.model.running -= 1
        if self.model.failing:
            raise RuntimeError("the review model is down")
        rows = await self.chat_log.since(scope, after_row, 50)
        return ReviewOutcome(last_row=rows[-1].id if rows else after_row)


@dataclass
class Process:
    """One bot process: its connection, its review scheduler and its reviewer."""

    database: Backend
    reviews: ReviewScheduler
    reviewer: GatedReviewer

    async def state(self) -> ReviewState:
        return await self.reviews.store.get(KEY)

    async def reviews_done(self) -> None:
        await asyncio.gather(*list(self.reviews.running.values()), return_exceptions=True)


@pytest.fixture
async def start_process(open_backend: Opener) -> AsyncIterator[Callable[..., object]]:
    """Starts a process on the test's database; all are stopped at the end."""
    from nonebot_plugin_aimemory.chatlog.scheduler import ReviewScheduler
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore
    from nonebot_plugin_aimemory.store.review_store import ReviewStore

    started: list[Process] = []

    async def start(name: str, model: ModelCalls, **settings: object) -> Process:
        database = await open_backend()
        reviewer = GatedReviewer(name, ChatLogStore(database), model)
        reviews = ReviewScheduler(
            cast("MemoryReviewer", reviewer),
            ReviewStore(database),
            tick_seconds=60,
            interval_seconds=300,
            min_new_rows=1,
            enabled_by_default=True,
            **settings,  # type: ignore[arg-type]
        )
        process = Process(database, reviews, reviewer)
        started.append(process)
        return process

    yield start
    for process in started:
        process.reviewer.gate.set()
        await process.reviews.close()
        await process.database.close()


async def chat_logged(process: Process, rows: int = 3) -> None:
    """People talked in the chat: its rows are logged and it is marked for review."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

    await process.reviewer.chat_log.insert_many(
        [ChatRow(KEY, LOGGED_AT, "user", f"第{n}句") for n in range(rows)]
    )
    await process.reviews.store.mark_pending([KEY])


async def until(check: Callable[[], bool], timeout_seconds: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not check():
        assert time.monotonic() < deadline, "still waiting"
        await asyncio.sleep(0.01)


async def test_two_processes_ticking_at_once_review_a_pending_chat_once(start_process) -> None:
    model, clock = ModelCalls(), FakeClock()
    first = await start_process("first", model, clock=clock)
    second = await start_process("second", model, clock=clock)
    await chat_logged(first)

    await asyncio.gather(first.reviews.tick(), second.reviews.tick())
    await until(lambda: model.running == 1)
    await asyncio.sleep(0.1)  # time for a second review to start, were it to
    first.reviewer.gate.set()
    second.reviewer.gate.set()
    await first.reviews_done()
    await second.reviews_done()
    again = await asyncio.gather(first.reviews.tick(), second.reviews.tick())

    assert len(model.calls) == 1
    assert again == [[], []]
    state = await second.state()
    assert (state.last_reviewed_row, state.pending, state.claimed) == (3, False, False)


async def test_a_review_by_hand_waits_for_the_other_processs_review_of_the_chat(
    start_process, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nonebot_plugin_aimemory.chatlog import scheduler

    monkeypatch.setattr(scheduler, "CLAIM_POLL_SECONDS", 0.02)
    model, clock = ModelCalls(), FakeClock()
    first = await start_process("first", model, clock=clock)
    second = await start_process("second", model, clock=clock)
    await chat_logged(first)
    await first.reviews.tick()
    await until(lambda: model.running == 1)

    by_hand = asyncio.create_task(second.reviews.run_now(KEY))
    await asyncio.sleep(0.2)
    waited = list(model.calls)
    seen_running = second.reviews.reviewing(await second.state())
    first.reviewer.gate.set()
    await first.reviews_done()
    second.reviewer.gate.set()
    await by_hand

    assert waited == [("first", 0)]
    assert seen_running
    assert model.calls == [("first", 0), ("second", 3)]  # after what the first reviewed
    assert model.most_at_once == 1


async def test_a_failed_review_is_counted_once_when_two_processes_tick(start_process) -> None:
    model, clock = ModelCalls(failing=True), FakeClock()
    first = await start_process("first", model, clock=clock)
    second = await start_process("second", model, clock=clock)
    await chat_logged(first)
    first.reviewer.gate.set()
    second.reviewer.gate.set()

    await asyncio.gather(first.reviews.tick(), second.reviews.tick())
    await first.reviews_done()
    await second.reviews_done()
    await asyncio.gather(first.reviews.tick(), second.reviews.tick())  # before the retry
    await first.reviews_done()
    await second.reviews_done()

    state = await first.state()
    assert len(model.calls) == 1
    assert (state.failures, state.claimed, state.pending) == (1, False, True)


async def test_a_chat_whose_claim_ran_out_is_reviewed_by_another_process(
    start_process,
) -> None:
    model = ModelCalls()
    first_clock, second_clock = FakeClock(), FakeClock()
    first = await start_process("first", model, clock=first_clock, claim_seconds=120)
    second = await start_process("second", model, clock=second_clock)
    await chat_logged(first)
    await first.reviews.tick()  # and then it hangs, renewing nothing
    await until(lambda: model.running == 1)

    second_clock.advance(119)
    while_held = await second.reviews.tick()
    await second.reviews_done()
    second_clock.advance(2)
    second.reviewer.gate.set()
    ran_out = await second.reviews.tick()
    await second.reviews_done()
    first.reviewer.gate.set()  # the hung review ends late: the mark only moves on
    await first.reviews_done()

    assert model.calls == [("first", 0), ("second", 0)]
    assert (while_held, ran_out) == ([], [KEY])
    state = await second.state()
    assert (state.last_reviewed_row, state.claimed, state.pending) == (3, False, False)


async def test_a_running_review_renews_its_claim_so_no_other_process_takes_it(
    start_process,
) -> None:
    model = ModelCalls()
    first = await start_process("first", model, claim_seconds=0.5, renew_claim_seconds=0.05)
    second = await start_process("second", model)
    await chat_logged(first)
    await first.reviews.tick()
    await until(lambda: model.running == 1)

    deadline = time.monotonic() + 1.5  # three claims long
    while time.monotonic() < deadline:
        await second.reviews.tick()
        await asyncio.sleep(0.05)
    second.reviewer.gate.set()
    await second.reviews_done()
    first.reviewer.gate.set()
    await first.reviews_done()

    assert model.calls == [("first", 0)]
    assert (await second.state()).last_reviewed_row == 3


async def test_a_process_stopped_mid_review_hands_the_chat_to_another_at_once(
    start_process,
) -> None:
    model, clock = ModelCalls(), FakeClock()
    first = await start_process("first", model, clock=clock)
    second = await start_process("second", model, clock=clock)
    await chat_logged(first)
    await first.reviews.tick()
    await until(lambda: model.running == 1)

    await first.reviews.close()
    second.reviewer.gate.set()
    taken = await second.reviews.tick()
    await second.reviews_done()

    assert taken == [KEY]
    assert model.calls == [("first", 0), ("second", 0)]
    assert (await second.state()).last_reviewed_row == 3
