"""Classification time of 100 000-character messages of various shapes: the plugin's
`Inbound` translation plus `content.plain()` in thread CPU time, beside NoneBot's
`event.get_plaintext()` (the baseline).
Target: CPU p99 < 20 ms for every shape.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message, MessageSegment

from bench import harness as h
from tests.fakes.events import group_message

TARGET_P99_MS = 20.0
CHARS = 100_000
RUNS, QUICK_RUNS, WARMUP_RUNS = 50, 10, 3
SEGMENT_KINDS: tuple[Callable[[int], MessageSegment], ...] = (
    lambda i: MessageSegment.text("今天吃什么好呢？ "),
    lambda i: MessageSegment.at(10_000 + i % 50),
    lambda i: MessageSegment.face(i % 200),
    lambda i: MessageSegment.image(f"https://gchat.qpic.cn/{i}.jpg"),
)
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
)


async def run(bench: h.Bench) -> None:
    """Classify every shape, print p50/p99 beside the baseline, then the verdict."""
    runs = QUICK_RUNS if bench.quick else RUNS
    print(f"{CHARS} characters per message; {runs} runs per shape; translate + plain()")
    bot, worst_p99_ms = h.CountingBot(), 0.0
    async with h.plugin(bench) as (_, runtime):

        async def classify(event: GroupMessageEvent) -> object:
            incoming = await runtime.inbound.translate(bot, event)
            if incoming is None:
                raise RuntimeError("the plugin ignored the bench's message")
            return incoming, incoming.content.plain()

        for label, shape in SHAPES:
            event = group_message(shape(), role="admin", to_me=False)
            inputs = [event] * (WARMUP_RUNS + runs)
            cpu = await h.timed(classify, inputs, WARMUP_RUNS, clock=time.thread_time_ns)
            print(label)
            print(h.latency("  classify, CPU time", cpu))
            baseline = await h.timed(GroupMessageEvent.get_plaintext, [event] * runs)
            print(h.latency("  baseline: event.get_plaintext()", baseline))
            worst_p99_ms = max(worst_p99_ms, h.ms(h.percentile(cpu, 0.99)))
    label = f"worst CPU-time p99 {worst_p99_ms:.2f} ms < {TARGET_P99_MS:.0f} ms"
    h.verdict(label, worst_p99_ms < TARGET_P99_MS, quick=bench.quick)


if __name__ == "__main__":
    h.main(__doc__, run)
