"""On a model server of this machine (llama.cpp's one slot), background calls start only
in a lull and one at a time: a call started between two members' turns and stopped half a
second later had cost the next member's call its cached prompt (engine/model_traffic.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

LOCAL = "http://127.0.0.1:8080"
LULL = 0.4


class Calls:
    """Background calls that count their starts, the ones in flight at once, and how many
    were stopped; each runs `seconds` unless stopped."""

    def __init__(self, seconds: float = 0.05) -> None:
        self.seconds = seconds
        self.starts: list[float] = []
        self.in_flight = 0
        self.most_at_once = 0
        self.stopped = 0

    def call(self, answer: str) -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            self.starts.append(time.monotonic())
            self.in_flight += 1
            self.most_at_once = max(self.most_at_once, self.in_flight)
            try:
                await asyncio.sleep(self.seconds)
            except asyncio.CancelledError:
                self.stopped += 1
                raise
            finally:
                self.in_flight -= 1
            return answer

        return run


async def a_turn(traffic, seconds: float = 0.05) -> float:
    """A member's turn of `seconds`; returns when it ended."""
    async with traffic.turn():
        await asyncio.sleep(seconds)
    return time.monotonic()


async def test_a_review_after_a_turn_waits_for_a_lull_before_it_starts() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, calls = ModelTraffic(lull_seconds=LULL), Calls()
    ended = await a_turn(traffic)

    assert await traffic.background(LOCAL, calls.call("审"), "review") == "审"

    assert len(calls.starts) == 1
    assert calls.starts[0] - ended >= LULL * 0.95


async def test_a_review_after_a_long_quiet_starts_at_once() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, calls = ModelTraffic(lull_seconds=LULL), Calls()
    await a_turn(traffic)
    await asyncio.sleep(LULL)
    asked = time.monotonic()

    await traffic.background(LOCAL, calls.call("审"), "review")

    assert calls.starts[0] - asked < LULL / 2


async def test_turns_closer_than_a_lull_never_see_a_review_started_and_stopped() -> None:
    # given members' turns half a lull apart, as in the real-model bench (the next message
    # comes as soon as the answer is in) and in a busy group
    from nonebot_plugin_aimemory.engine.model_traffic import MAX_YIELDS, ModelTraffic

    traffic, calls = ModelTraffic(lull_seconds=LULL), Calls(seconds=0.3)
    await a_turn(traffic)
    review = asyncio.create_task(traffic.background(LOCAL, calls.call("审"), "review"))
    turns = 0
    while not review.done():
        await asyncio.sleep(LULL / 2)
        await a_turn(traffic)
        turns += 1
        assert turns < 20, "the review never ran"

    # then it was started once, after stepping aside for as many turns as it may, and
    # never stopped (before, each gap between turns started it and the next turn stopped it)
    assert await review == "审"
    assert len(calls.starts) == 1
    assert calls.stopped == 0
    assert MAX_YIELDS <= turns <= MAX_YIELDS + 2


async def test_background_calls_to_a_local_server_go_one_at_a_time() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, calls = ModelTraffic(lull_seconds=0.0), Calls(seconds=0.1)

    answers = await asyncio.gather(
        *(traffic.background(LOCAL, calls.call(f"第{n}"), "review") for n in range(4))
    )

    assert answers == ["第0", "第1", "第2", "第3"]
    assert calls.most_at_once == 1
    assert calls.stopped == 0


async def test_calls_due_together_run_one_between_two_turns() -> None:
    # given two reviews that stepped aside as often as they may, turns that follow each
    # other closer than a lull, and reviews longer than the gap between two turns
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, calls = ModelTraffic(lull_seconds=LULL), Calls(seconds=0.3)
    await a_turn(traffic)
    reviews = [
        asyncio.create_task(traffic.background(LOCAL, calls.call(f"第{n}"), "review"))
        for n in range(2)
    ]
    turn_ends: list[float] = []
    while not all(review.done() for review in reviews):
        await asyncio.sleep(0.1)
        turn_ends.append(await a_turn(traffic, seconds=0.2))
        assert len(turn_ends) < 20, "the reviews never ran"

    # then the second did not follow the first in the member's turn that came meanwhile:
    # it waited for that turn to end
    first, second = sorted(calls.starts)
    assert any(first < ended < second for ended in turn_ends)
    assert calls.most_at_once == 1


async def test_a_providers_api_gets_background_calls_at_once_and_together() -> None:
    # a provider's API serves many requests at once: no lull, no taking turns
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, calls = ModelTraffic(lull_seconds=LULL), Calls(seconds=0.2)
    await a_turn(traffic)
    asked = time.monotonic()

    await asyncio.gather(
        *(traffic.background("https://api.deepseek.com", calls.call("审"), "r") for _ in range(3))
    )

    assert calls.most_at_once == 3
    assert max(calls.starts) - asked < LULL / 2
