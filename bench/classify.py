"""Classification time of 100 000-character messages, per message shape.

The plugin's `Inbound` translation plus `content.plain()`, in thread CPU time beside the wall
clock; baseline: NoneBot's `event.get_plaintext()`; for scale, the old regex command parser.
Target: CPU p99 < 20 ms for every shape but the last (for information).
"""

from __future__ import annotations

import gc
import json
import os
import re
import time
from collections.abc import Callable

from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message, MessageSegment

from bench import harness as h
from tests.fakes.events import group_message

TARGET_P99_MS = 20.0
CHARS = 100_000
RUNS, QUICK_RUNS, WARMUP_RUNS = 50, 10, 3
# The command regex before the linear parser (for the scale line only).
OLD_COMMAND = re.compile(r"^\s*[~～/](对话|记忆)(?:\s+(\S+)(?:\s+(.*?))?)?\s*$", re.DOTALL)
OLD_PARSER_SPACES = (2_000, 4_000)
SEGMENT_KINDS: tuple[Callable[[int], MessageSegment], ...] = (
    lambda i: MessageSegment.text("今天吃什么好呢？ "),
    lambda i: MessageSegment.at(10_000 + i % 50),
    lambda i: MessageSegment.face(i % 200),
    lambda i: MessageSegment.image(f"https://gchat.qpic.cn/{i}.jpg"),
)
# (label, content); the last is the information-only shape.
SHAPES: tuple[tuple[str, Callable[[], Message | str]], ...] = (
    ("Chinese paste", lambda: ("今天天气不错，我们去公园散步吧。" * CHARS)[:CHARS]),
    ("spaces", lambda: " " * CHARS),
    ("~记忆 搜索 a + 40 000 spaces + b", lambda: "~记忆 搜索 a" + " " * 40_000 + "b"),
    ("~记忆 搜索 a + 100 000 spaces + b", lambda: "~记忆 搜索 a" + " " * CHARS + "b"),
    ("CQ-like text [CQ:at,qq=1]…", lambda: ("[CQ:at,qq=1]" * CHARS)[:CHARS]),
    ("emoji", lambda: "😀" * CHARS),
    ("lone surrogates", lambda: ("\ud83d啊" * CHARS)[:CHARS]),
    (
        "10 000 segments (text/@/face/image)",
        lambda: Message([SEGMENT_KINDS[i % 4](i) for i in range(CHARS // 10)]),
    ),
    ("XML card of unclosed <title>", lambda: Message(MessageSegment.xml("<title>" * 14_286))),
    (
        "JSON card",
        lambda: Message(MessageSegment.json(json.dumps({f"k{i}": "v" * 5 for i in range(8_333)}))),
    ),
    ("100 000 one-character segments", lambda: Message([MessageSegment.text("a")] * CHARS)),
)


async def classify_ns(
    runtime: h.Runtime, bot: h.CountingBot, event: GroupMessageEvent, runs: int
) -> tuple[list[int], list[int]]:
    """`runs` timings of translate + plain() on `event` in nanoseconds: wall clock, CPU."""
    wall: list[int] = []
    cpu: list[int] = []
    kept: list[object] = []
    for _ in range(runs):
        start, start_cpu = time.perf_counter_ns(), time.thread_time_ns()
        incoming = await runtime.inbound.translate(bot, event)
        if incoming is None:
            raise RuntimeError("the plugin ignored the bench's message")
        kept.append(incoming.content.plain())
        cpu.append(time.thread_time_ns() - start_cpu)
        wall.append(time.perf_counter_ns() - start)
        kept.append(incoming)
    return wall, cpu


def baseline_ns(event: GroupMessageEvent, runs: int) -> list[int]:
    """`runs` timings of NoneBot's `event.get_plaintext()` on `event`, in nanoseconds."""
    samples: list[int] = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        event.get_plaintext()
        samples.append(time.perf_counter_ns() - start)
    return samples


def old_parser_line() -> str:
    """The old regex parser on a short padded command, for scale."""
    timings = []
    for spaces in OLD_PARSER_SPACES:
        text = "~记忆 搜索 a" + " " * spaces + "b"
        start = time.perf_counter_ns()
        OLD_COMMAND.match(text)
        timings.append(f"{spaces} spaces {h.ms(time.perf_counter_ns() - start):.1f} ms")
    return "old regex command parser (for scale): " + ", ".join(timings)


async def run(bench: h.Bench) -> None:
    """Classify every shape, print p50/p99 beside the baseline, then the verdict."""
    runs = QUICK_RUNS if bench.quick else RUNS
    print(f"{CHARS} characters per message; {runs} runs per shape; translate + plain()")
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} CPUs")
    print(old_parser_line())
    bot, worst_p99_ms, worst_wall_p99_ms = h.CountingBot(), 0.0, 0.0
    async with h.plugin(bench) as (_, runtime):
        for index, (label, shape) in enumerate(SHAPES):
            event = group_message(shape(), role="admin", to_me=False)
            await classify_ns(runtime, bot, event, WARMUP_RUNS)
            gc.collect()
            wall, cpu = await classify_ns(runtime, bot, event, runs)
            baseline = baseline_ns(event, runs)
            informational = index == len(SHAPES) - 1
            print(("(info) " if informational else "") + label)
            print(h.latency("  classify, CPU time", cpu))
            print(h.latency("  classify, wall clock", wall))
            print(h.latency("  baseline: event.get_plaintext()", baseline))
            if not informational:
                worst_p99_ms = max(worst_p99_ms, h.ms(h.percentile(cpu, 0.99)))
                worst_wall_p99_ms = max(worst_wall_p99_ms, h.ms(h.percentile(wall, 0.99)))
    label = (
        f"worst CPU-time p99 {worst_p99_ms:.2f} ms < {TARGET_P99_MS:.0f} ms; "
        f"worst wall-clock p99 {worst_wall_p99_ms:.2f} ms"
    )
    h.verdict(label, worst_p99_ms < TARGET_P99_MS, quick=bench.quick)


if __name__ == "__main__":
    h.main(__doc__, run)
