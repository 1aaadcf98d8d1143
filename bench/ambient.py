"""Throughput of unaddressed group messages, in groups that never talked to the bot: the
plugin against a bare NoneBot with one counting matcher, in fresh processes, alternating.
Target: >= 90 % of the baseline's messages per second (the median of 3 runs each).
"""

from __future__ import annotations

import gc
import random
import time

from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message, MessageSegment
from nonebot.message import handle_event

from bench import harness as h
from tests.fakes.events import group_message

TARGET_RATIO = 0.90
GROUPS = 50
WARMUP_MESSAGES = 2000
FIRST_GROUP = {"warmup": 1, "silent": 100_000}


def unaddressed(count: int, mix: str) -> list[GroupMessageEvent]:
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


async def rate(
    bot: h.CountingBot, events: list[GroupMessageEvent], runtime: h.Runtime | None = None
) -> float:
    """Messages per second handling `events` one after another, with the plugin's writes they
    caused (nothing public waits for the auto-clears but closing it, which keeps it usable)."""
    gc.collect()
    start = time.perf_counter()
    for event in events:
        await handle_event(bot, event)
    if runtime is not None:
        await runtime.autoclear.close()
    return len(events) / (time.perf_counter() - start)


async def measure_mode(bench: h.Bench) -> dict[str, float]:
    """One child process: the plugin's or the baseline's rate."""
    spec = bench.child or {}
    bot, messages = h.CountingBot(), spec["messages"]
    warmup = unaddressed(min(WARMUP_MESSAGES, messages), "warmup")
    silent = unaddressed(messages, "silent")
    if spec["mode"] == "plugin":
        async with h.plugin(bench, "在的") as (_, runtime):
            await rate(bot, warmup, runtime)
            result = await rate(bot, silent, runtime)
        if bot.sent_count:
            raise RuntimeError(f"{bot.sent_count} replies to unaddressed messages")
        return {"rate": result}
    from nonebot import on_message

    handled = [0]

    @on_message(priority=90, block=False).handle()
    async def count() -> None:
        handled[0] += 1

    await rate(bot, warmup)
    result = await rate(bot, silent)
    if handled[0] != len(warmup) + len(silent):
        raise RuntimeError(f"the counting matcher ran {handled[0]} times")
    return {"rate": result}


async def run(bench: h.Bench) -> dict[str, float] | None:
    """Alternate plugin and baseline processes, then print the rates and the verdict."""
    if bench.child is not None:
        return await measure_mode(bench)
    messages, repeats = (500, 1) if bench.quick else (10_000, 3)
    print(f"messages: {messages}; runs per mode: {repeats}, alternating, median shown")
    rates: dict[str, list[float]] = {"baseline": [], "plugin": []}
    for _ in range(repeats):
        for mode, mode_rates in rates.items():
            spec = {"mode": mode, "messages": messages, "load_plugin": mode == "plugin"}
            mode_rates.append((await h.run_child("bench.ambient", spec))["rate"])
    b, a = (sorted(mode_rates)[repeats // 2] for mode_rates in rates.values())
    print(
        f"(a) plugin {a:7.0f} msg/s ({1e6 / a:5.1f} us/msg)   "
        f"(b) baseline {b:7.0f} msg/s ({1e6 / b:5.1f} us/msg)   a/b {a / b:.1%}"
    )
    h.verdict(f"a/b {a / b:.1%} >= {TARGET_RATIO:.0%}", a / b >= TARGET_RATIO, quick=bench.quick)
    return None


if __name__ == "__main__":
    h.main(__doc__, run)
