"""Throughput of unaddressed group messages (~10 % @ another member, ~5 % images)
through `nonebot.message.handle_event`, in fresh processes: the plugin against a bare NoneBot
with one counting `on_message` matcher (the baseline). 10 000 messages (500 with --quick) per
mix: `silent` (50 groups that never talked to the bot) and `spread` (50 groups each just
after an addressed turn: counter writes, auto-clear at 30); 3 alternating runs, the median.

Target: plugin throughput >= 90 % of the baseline on the silent mix.
Run: python -m bench.ambient [--quick]
"""

from __future__ import annotations

import gc
import random
import time
from typing import TYPE_CHECKING, Any

from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message, MessageSegment
from nonebot.message import handle_event

from bench.harness import (
    Bench,
    CountingBot,
    chat_line,
    fake_llm,
    main,
    plugin_runtime,
    run_child,
    settle_autoclear,
    verdict,
)
from tests.fakes.events import group_message
from tests.fakes.openai_server import text

if TYPE_CHECKING:
    from bench.harness import Runtime

TARGET_RATIO = 0.90
GROUPS = 50
WARMUP_MESSAGES = 2000
MIXES = ("silent", "spread")
FIRST_GROUP = {"warmup": 1, "silent": 100_000, "spread": 200_000}


def unaddressed(count: int, mix: str) -> list[GroupMessageEvent]:
    """`count` messages round-robin over the mix's groups, like ordinary group chatter."""
    rng = random.Random(mix)
    events = []
    for index in range(count):
        user_id = 3000 + rng.randrange(200)
        content = Message(MessageSegment.text(chat_line(rng, 5, 60)))
        roll = rng.random()
        if roll < 0.10:
            content = MessageSegment.at(user_id + 1) + content
        elif roll < 0.15:
            content += MessageSegment.image(f"http://127.0.0.1:9/{index}.jpg")  # never fetched
        group_id = FIRST_GROUP[mix] + index % GROUPS
        events.append(group_message(content, group_id=group_id, user_id=user_id, to_me=False))
    return events


async def drive(
    bot: CountingBot, events: list[GroupMessageEvent], runtime: Runtime | None
) -> float:
    """Seconds to handle `events` one after another, and the plugin's writes they caused."""
    gc.collect()
    start = time.perf_counter()
    for event in events:
        await handle_event(bot, event)
    if runtime is not None:
        await settle_autoclear(runtime)
    return time.perf_counter() - start


def counting_matcher() -> list[int]:
    """The baseline's one matcher; the returned list holds how often it ran."""
    from nonebot import on_message

    handled = [0]
    matcher = on_message(priority=90, block=False)

    @matcher.handle()
    async def count() -> None:
        handled[0] += 1

    return handled


async def measure_mode(bench: Bench) -> dict[str, Any]:
    """One child process: the rate of each mix in messages per second."""
    spec = bench.child or {}
    messages: int = spec["messages"]
    bot = CountingBot()
    warmup = unaddressed(min(WARMUP_MESSAGES, messages), "warmup")
    mixes = {mix: unaddressed(messages, mix) for mix in MIXES}
    result: dict[str, Any] = {}
    if spec["mode"] == "baseline":
        handled = counting_matcher()
        await drive(bot, warmup, None)
        for mix, events in mixes.items():
            result[mix] = messages / await drive(bot, events, None)
        if handled[0] != len(warmup) + messages * len(MIXES):
            raise RuntimeError(f"the counting matcher ran {handled[0]} times")
        return result
    with fake_llm(lambda body: text("在的")) as llm:
        async with plugin_runtime(llm, bench.work_dir / "aimemory.db") as runtime:
            await drive(bot, warmup, runtime)
            result["silent"] = messages / await drive(bot, mixes["silent"], runtime)
            for group_id in range(FIRST_GROUP["spread"], FIRST_GROUP["spread"] + GROUPS):
                await handle_event(bot, group_message("在吗", group_id=group_id, to_me=True))
            await runtime.chat_log.flush()
            clears = runtime.autoclear.clears_done
            result["spread"] = messages / await drive(bot, mixes["spread"], runtime)
            result["clears"] = runtime.autoclear.clears_done - clears
    if bot.sent_count != GROUPS:
        raise RuntimeError(
            f"{bot.sent_count} replies; only the {GROUPS} addressed turns expect one"
        )
    return result


def median_run(runs: list[dict[str, Any]], mix: str) -> dict[str, Any]:
    """The run with the median rate of `mix`."""
    return sorted(runs, key=lambda r: r[mix])[len(runs) // 2]


async def run(bench: Bench) -> dict[str, Any] | None:
    """Alternate plugin and baseline processes, then print the rates and the verdict."""
    if bench.child is not None:
        return await measure_mode(bench)
    messages, repeats = (500, 1) if bench.quick else (10_000, 3)
    print(f"messages per mix: {messages}; runs per mode: {repeats}, alternating, median shown")
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "plugin": []}
    for _ in range(repeats):
        for mode, mode_runs in runs.items():
            spec = {"mode": mode, "messages": messages, "load_plugin": mode == "plugin"}
            mode_runs.append(run_child("bench.ambient", spec))
    ratios = {}
    for mix in MIXES:
        a, b = median_run(runs["plugin"], mix), median_run(runs["baseline"], mix)
        ratios[mix] = a[mix] / b[mix]
        print(
            f"[{mix}] (a) plugin {a[mix]:7.0f} msg/s ({1e6 / a[mix]:5.1f} us/msg)   "
            f"(b) baseline {b[mix]:7.0f} msg/s ({1e6 / b[mix]:5.1f} us/msg)   "
            f"a/b {ratios[mix]:.1%}" + (f"   auto-clears {a['clears']}" if mix == "spread" else "")
        )
    label = f"silent: a/b {ratios['silent']:.1%} >= {TARGET_RATIO:.0%}"
    verdict(label, ratios["silent"] >= TARGET_RATIO, quick=bench.quick)
    return None


if __name__ == "__main__":
    main(__doc__, run)
