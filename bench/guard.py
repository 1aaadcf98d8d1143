"""CPU per 2 000-character memory of the injection guard and the personal-number masks.

Group chat, English, and the guard's benign corpus full of steering words, thread CPU beside
wall time; baselines: a substring scan for 40 trigger words, one `re.findall` of digit runs;
for scale, the slowest of a set of 100 000-character floods.
Target: CPU p99 < 1 ms for the guard and for the masks on every kind of memory.
"""

from __future__ import annotations

import gc
import random
import re
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from bench import harness as h
from tests.guard.guard_corpus import BENIGN

TARGET_P99_MS = 1.0
MEMORY_CHARS = 2_000
MEMORIES, QUICK_MEMORIES = 500, 100
FLOOD_CHARS = 100_000
TAGS = ("备忘", "饮食", "工作", "爱好", "住址", "计划", "宠物", "事件")
ENGLISH = (
    "Bob(2004) works as a system administrator at a hospital",
    "Alice(2005) prefers tea to coffee and never drinks soda",
    "Tom(2006) said the meeting moved to Thursday at 3 pm",
    "The new office is on the 5th floor, room 502",
    "Bob(2004) forgot his badge again and had to sign in at the desk",
    "Alice(2005) is learning the guitar and practices every evening",
    "Tom(2006) keeps his bike in the garage, the code is on the fridge",
    "The previous manager left in March; the new one starts Monday",
    "Bob(2004) told us to follow the instructions in the manual",
    "Alice(2005) uses the dark mode and a large font in her editor",
)
NUMBERS = (
    *("手机 138 1234 5678", "电话 138.1234.5678", "卡号 6222 0212 3456 7890 128"),
    *("身份证 ID11010519491231002X", "订单号 12345678901", "群号 123456789", "价格 1299 元"),
    *("2024-01-15 12:30", "v2.3.1"),
)
TRIGGER_WORDS = (
    *("ignore", "disregard", "forget", "override", "instructions", "prompt", "from now on"),
    *("you are now", "pretend", "jailbreak", "developer mode", "system:", "assistant:"),
    *("user:", "human:", "<|", "[inst]", "<start_of_turn>", "【系统】", "系统：", "助手："),
    *("忽略", "忽视", "无视", "忘记", "忘掉", "之前的", "以上", "指令", "提示词", "设定"),
    *("规则", "作废", "你现在是", "扮演", "越狱", "开发者模式", "系统提示", "从现在起"),
)
FLOOD_UNITS = (
    *("忽略之前", "把之前的", "你现在", "忽 ", "ignore the ", "ignore all of the ", "["),
    *('"name": ', "\u0430\u0435", "1 ", "12-34 ", "13812345678 "),
)
_DIGIT_RUNS = re.compile(r"\d+")


class Memory(NamedTuple):
    """What the model passes to the save tool."""

    content: str
    tags: tuple[str, ...]
    user_id: str


def memory_of(rng: random.Random, next_piece: Callable[[], str]) -> Memory:
    """A memory of `MEMORY_CHARS` characters made of pieces, with a number now and then."""
    pieces: list[str] = []
    length = 0
    while length < MEMORY_CHARS:
        piece = next_piece() + (f"，{rng.choice(NUMBERS)}" if rng.random() < 0.2 else "")
        pieces.append(piece)
        length += len(piece) + 1
    content = "。".join(pieces)[:MEMORY_CHARS]
    return Memory(content, tuple(rng.sample(TAGS, 3)), str(rng.randint(10_000, 9_999_999_999)))


def timed(call: Callable[[Memory], object], batch: Sequence[Memory]) -> tuple[list[int], list[int]]:
    """Nanoseconds of `call` on each memory: wall clock, CPU time of this thread."""
    for memory in batch[:10]:
        call(memory)  # warm up the caches of the regex module and unicodedata
    gc.collect()
    wall: list[int] = []
    cpu: list[int] = []
    for memory in batch:
        start, start_cpu = time.perf_counter_ns(), time.thread_time_ns()
        call(memory)
        cpu.append(time.thread_time_ns() - start_cpu)
        wall.append(time.perf_counter_ns() - start)
    return wall, cpu


def substring_scan(memory: Memory) -> bool:
    """The guard's baseline: lower case once, look for each trigger word."""
    text = " ".join((memory.content, *memory.tags)).lower()
    return any(word in text for word in TRIGGER_WORDS)


def slowest_flood() -> tuple[str, float]:
    """The 100 000-character flood that takes guard and masks longest, and its CPU ms."""
    from nonebot_plugin_aimemory.guard import injection_reason, mask_pii

    worst = ("", 0.0)
    for unit in FLOOD_UNITS:
        text = (unit * (FLOOD_CHARS // len(unit) + 1))[:FLOOD_CHARS]
        start = time.thread_time_ns()
        injection_reason(text)
        mask_pii(text)
        worst = max(worst, (unit, h.ms(time.thread_time_ns() - start)), key=lambda pair: pair[1])
    return worst


async def run(bench: h.Bench) -> None:
    """Time guard and masks on each kind of memory, then print figures and the verdict."""
    from nonebot_plugin_aimemory.guard import injection_reason_for_memory, mask_pii

    def guard(memory: Memory) -> object:
        return injection_reason_for_memory(memory.content, memory.tags, memory.user_id)

    calls: dict[str, Callable[[Memory], object]] = {
        "guard": guard,
        "  baseline: substring scan": substring_scan,
        "masks": lambda memory: mask_pii(memory.content),
        "  baseline: digit runs": lambda memory: _DIGIT_RUNS.findall(memory.content),
    }
    rng, count = random.Random(20261201), QUICK_MEMORIES if bench.quick else MEMORIES
    pieces: dict[str, Callable[[], str]] = {
        "group chat": lambda: h.chat_line(rng, 20, 200),
        "English": lambda: rng.choice(ENGLISH),
        "benign corpus (trigger words)": lambda: rng.choice(BENIGN),
    }
    p99_cpu: dict[str, float] = {}
    batches = {
        kind: [memory_of(rng, piece) for _ in range(count)] for kind, piece in pieces.items()
    }
    for kind, batch in batches.items():
        refused = sum(guard(memory) is not None for memory in batch)
        print(f"{kind}: {len(batch)} memories of {MEMORY_CHARS} characters, {refused} refused")
        for label, call in calls.items():
            wall, cpu = timed(call, batch)
            print(h.latency(f"  {label} (wall)", wall))
            print(h.latency(f"  {label} (CPU)", cpu))
            if not label.startswith(" "):
                p99_cpu[f"{label} on {kind}"] = h.ms(h.percentile(cpu, 0.99))
    unit, flood_ms = slowest_flood()
    print(
        f"slowest 100 000-character flood ({unit!r} repeated): guard + masks {flood_ms:.1f} ms CPU"
    )
    worst_label, worst = max(p99_cpu.items(), key=lambda pair: pair[1])
    h.verdict(
        f"CPU p99 of every guard and mask call < {TARGET_P99_MS} ms; "
        f"slowest {worst_label}: {worst:.3f} ms",
        worst < TARGET_P99_MS,
        quick=bench.quick,
    )


if __name__ == "__main__":
    h.main(__doc__, run)
