"""Throughput of unaddressed group messages: the plugin against a bare NoneBot.

Fresh processes, 3 alternating runs, the median; the baseline has one counting `on_message`
matcher. Mixes: `silent` (groups that never talked to the bot), `spread` (groups just after an
addressed turn: counter writes, auto-clear). Target: >= 90 % of the baseline on the silent mix.
"""

from __future__ import annotations

import gc
import random
import time
from operator import itemgetter
from typing import Any

from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message, MessageSegment
from nonebot.message import handle_event

from bench import harness as h
from tests.fakes.events import group_message

TARGET_RATIO = 0.90
GROUPS = 50
WARMUP_MESSAGES = 2000
MIXES = ("silent", "spread")
FIRST_GROUP = {"warmup": 1, "silent": 100_000, "spread": 200_000}
Events = list[GroupMessageEvent]
Rates = dict[str, Any]  # messages per second of each mix, and the spread mix's auto-clears


def unaddressed(count: int, mix: str) -> Events:
    """`count` messages round-robin over the mix's groups, like ordinary group chatter."""
    rng = random.Random(mix)
    events = []
    for index in range(count):
        user_id = 3000 + rng.randrange(200)
        content = Message(MessageSegment.text(h.chat_line(rng, 5, 60)))
        roll = rng.random()
        if roll < 0.10:
            content = MessageSegment.at(user_id + 1) + content
        elif roll < 0.15:
            content += MessageSegment.image(f"http://127.0.0.1:9/{index}.jpg")  # never fetched
        group_id = FIRST_GROUP[mix] + index % GROUPS
        events.append(group_message(content, group_id=group_id, user_id=user_id, to_me=False))
    return events


async def rate(bot: h.CountingBot, events: Events, runtime: h.Runtime | None = None) -> float:
    """Messages per second handling `events` one after another (with the plugin's writes
    they caused: nothing public waits for the auto-clears without closing it, which stays
    usable afterwards)."""
    gc.collect()
    start = time.perf_counter()
    for event in events:
        await handle_event(bot, event)
    if runtime is not None:
        await runtime.autoclear.close()
    return len(events) / (time.perf_counter() - start)


async def baseline_rates(bot: h.CountingBot, warmup: Events, mixes: dict[str, Events]) -> Rates:
    """A bare NoneBot with one counting matcher: the rate of each mix."""
    from nonebot import on_message

    handled = [0]

    @on_message(priority=90, block=False).handle()
    async def count() -> None:
        handled[0] += 1

    await rate(bot, warmup)
    result = {mix: await rate(bot, events) for mix, events in mixes.items()}
    if handled[0] != len(warmup) + sum(map(len, mixes.values())):
        raise RuntimeError(f"the counting matcher ran {handled[0]} times")
    return result


async def measure_mode(bench: h.Bench) -> Rates:
    """One child process: the rate of each mix in messages per second."""
    spec = bench.child or {}
    messages: int = spec["messages"]
    bot = h.CountingBot()
    warmup = unaddressed(min(WARMUP_MESSAGES, messages), "warmup")
    mixes = {mix: unaddressed(messages, mix) for mix in MIXES}
    if spec["mode"] == "baseline":
        return await baseline_rates(bot, warmup, mixes)
    async with h.plugin(bench, "在的") as (_, runtime):
        await rate(bot, warmup, runtime)
        result = {"silent": await rate(bot, mixes["silent"], runtime)}
        for group_id in range(FIRST_GROUP["spread"], FIRST_GROUP["spread"] + GROUPS):
            await handle_event(bot, group_message("在吗", group_id=group_id, to_me=True))
        await runtime.chat_log.flush()
        clears = runtime.autoclear.clears_done
        result["spread"] = await rate(bot, mixes["spread"], runtime)
        result["clears"] = runtime.autoclear.clears_done - clears
    if bot.sent_count != GROUPS:
        raise RuntimeError(
            f"{bot.sent_count} replies; only the {GROUPS} addressed turns expect one"
        )
    return result


async def run(bench: h.Bench) -> Rates | None:
    """Alternate plugin and baseline processes, then print the rates and the verdict."""
    if bench.child is not None:
        return await measure_mode(bench)
    messages, repeats = (500, 1) if bench.quick else (10_000, 3)
    print(f"messages per mix: {messages}; runs per mode: {repeats}, alternating, median shown")
    runs: dict[str, list[Rates]] = {"baseline": [], "plugin": []}
    for _ in range(repeats):
        for mode, mode_runs in runs.items():
            spec = {"mode": mode, "messages": messages, "load_plugin": mode == "plugin"}
            mode_runs.append(h.run_child("bench.ambient", spec))
    ratios = {}
    for mix in MIXES:
        b, a = (sorted(mode_runs, key=itemgetter(mix))[repeats // 2] for mode_runs in runs.values())
        ratios[mix] = a[mix] / b[mix]
        print(
            f"[{mix}] (a) plugin {a[mix]:7.0f} msg/s ({1e6 / a[mix]:5.1f} us/msg)   "
            f"(b) baseline {b[mix]:7.0f} msg/s ({1e6 / b[mix]:5.1f} us/msg)   "
            f"a/b {ratios[mix]:.1%}" + (f"   auto-clears {a['clears']}" if mix == "spread" else "")
        )
    label = f"silent: a/b {ratios['silent']:.1%} >= {TARGET_RATIO:.0%}"
    h.verdict(label, ratios["silent"] >= TARGET_RATIO, quick=bench.quick)
    return None


if __name__ == "__main__":
    h.main(__doc__, run)
