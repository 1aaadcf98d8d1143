"""CPU per 2 000-character memory of the injection guard and the personal-number masks (thread
CPU time; baselines: a substring scan for trigger words, a `re.findall` of digit runs), and the
guard's rates on its own corpus (tests/guard/corpus) and the public ones (bench/guard_public.py).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable

from bench import generated_chat as gen
from bench import harness as h
from bench.guard_public import options, run_public
from tests.guard.corpus import SHAPES, SPLITS, guard_rates
from tests.guard.guard_corpus import BENIGN

TARGET_P99_MS = 1.0
MAX_FALSE_POSITIVE_RATE = 0.01
MEMORY_CHARS = 2_000
MEMORIES, QUICK_MEMORIES = 500, 100
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
_DIGIT_RUNS = re.compile(r"\d+")


def memory_of(rng: random.Random, next_piece: Callable[[], str]) -> gen.Memory:
    """A memory of `MEMORY_CHARS` characters made of pieces, with a number now and then."""
    pieces: list[str] = []
    length = 0
    while length < MEMORY_CHARS:
        piece = next_piece() + (f"，{rng.choice(NUMBERS)}" if rng.random() < 0.2 else "")
        pieces.append(piece)
        length += len(piece) + 1
    content = "。".join(pieces)[:MEMORY_CHARS]
    return gen.Memory(content, tuple(rng.sample(TAGS, 3)), str(rng.randint(10_000, 9_999_999_999)))


def substring_scan(memory: gen.Memory) -> bool:
    """The guard's baseline: lower case once, look for each trigger word."""
    text = " ".join((memory.content, *memory.tags)).lower()
    return any(word in text for word in TRIGGER_WORDS)


async def run(bench: h.Bench) -> None:
    """Time guard and masks on each kind of memory, then print figures and the verdict."""
    from nonebot_plugin_aimemory.guard import injection_reason_for_memory, mask_pii

    def guard(memory: gen.Memory) -> object:
        return injection_reason_for_memory(memory.content, memory.tags, memory.user_id)

    calls: dict[str, Callable[[gen.Memory], object]] = {
        "guard": guard,
        "  baseline: substring scan": substring_scan,
        "masks": lambda memory: mask_pii(memory.content),
        "  baseline: digit runs": lambda memory: _DIGIT_RUNS.findall(memory.content),
    }
    rng, count = random.Random(20261201), QUICK_MEMORIES if bench.quick else MEMORIES
    pieces: dict[str, Callable[[], str]] = {
        "group chat": lambda: gen.chat_line(rng, 20, 200),
        "English": lambda: rng.choice(ENGLISH),
        "benign corpus (trigger words)": lambda: rng.choice(BENIGN),
    }
    p99_cpu: dict[str, float] = {}
    batches = {
        kind: [memory_of(rng, piece) for _ in range(count)] for kind, piece in pieces.items()
    }
    for kind, batch in batches.items():
        print(f"{kind}: {len(batch)} memories of {MEMORY_CHARS} characters")
        for label, call in calls.items():
            # Warmed up on the whole batch, as a bot is: the guard caches what it makes of words.
            cpu = await h.timed(call, batch * 2, len(batch), clock=time.thread_time_ns)
            print(h.latency(f"  {label} (CPU)", cpu))
            if not label.startswith(" "):
                p99_cpu[f"{label} on {kind}"] = h.ms(h.percentile(cpu, 0.99))
    worst_label, worst = max(p99_cpu.items(), key=lambda pair: pair[1])
    worst_false_positives = print_corpus_rates()
    public = await run_public(bench.args, bench.quick)
    refused = max(worst_false_positives, public or 0.0)
    label = f"CPU p99 of every guard and mask call < {TARGET_P99_MS} ms; slowest {worst_label}: "
    label += f"{worst:.3f} ms; benign refused {refused:.2%} <= {MAX_FALSE_POSITIVE_RATE:.0%}"
    met = worst < TARGET_P99_MS and refused <= MAX_FALSE_POSITIVE_RATE
    h.verdict(label, met, quick=bench.quick)


def print_corpus_rates() -> float:
    """Print the refusal rates on each split; returns the worst false-positive rate."""
    worst = 0.0
    for split in SPLITS:
        rates = guard_rates(split)
        shapes = ", ".join(f"{shape} {rates.rate_of(shape=shape):.1%}" for shape in SHAPES)
        print(
            f"corpus {split} (the rules' languages): {rates.attacks} attacks, "
            f"{rates.refusal_rate:.1%} refused "
            f"({shapes}); {rates.benign} benign, {rates.false_positive_rate:.2%} refused"
        )
        worst = max(worst, rates.false_positive_rate)
    return worst


if __name__ == "__main__":
    h.main(__doc__, run, options)
