"""Plugin overhead per addressed turn: (event in -> `send_msg`) minus the time
awaiting the fake LLM's instant answer, through `nonebot.message.handle_event`, with a stored
window of 10 messages and a full one of ~124k tokens (compressor idle, the window restored
after each turn); the LLM round trip is shown beside.

Targets: overhead p50 <= 3 ms at 10 messages, <= 10 ms at the full window.
Run: python -m bench.turn_overhead [--quick]
"""

from __future__ import annotations

import gc
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nonebot.message import handle_event

from bench.harness import (
    SPEAKERS,
    Bench,
    CountingBot,
    LLMClock,
    addressed,
    chat_line,
    fake_llm,
    forget_requests,
    group_key,
    latency,
    main,
    ms,
    percentile,
    plugin_runtime,
    prefill_history,
    session_bot,
    time_llm_calls,
    verdict,
)
from tests.fakes.openai_server import FakeOpenAI, text

if TYPE_CHECKING:
    from bench.harness import Runtime

TARGET_SMALL_MS = 3.0
TARGET_FULL_MS = 10.0
FULL_TOKENS = (120_000, 127_000)  # the window the full case should hold
FULL_FILL_TOKENS = 124_000
BUDGET_TOKENS = 136_000
COMPRESS_THRESHOLD = 0.95
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_TEXT = "收到～这个我记下了，有需要随时叫我。"


@dataclass
class SizeResult:
    """What one window size measured."""

    label: str
    messages: int
    tokens: int
    cold_ns: int
    overhead_ns: list[int] = field(default_factory=list)
    llm_ns: list[int] = field(default_factory=list)


@dataclass
class Rig:
    """The running plugin, its bot and LLM, and the clock of its LLM calls."""

    runtime: Runtime
    bot: CountingBot
    clock: LLMClock
    llm: FakeOpenAI
    rng: random.Random


def exchange(rng: random.Random) -> tuple[str, str]:
    """A stored (user line, reply) pair, the user line in the plugin's speaker format."""
    name, user_id = rng.choice(SPEAKERS)
    line = f"[2026-11-30 14:05] {name}({user_id})：{chat_line(rng, 50, 150)}"
    return line, chat_line(rng, 50, 150)


def exchanges_up_to(rig: Rig, tokens: int) -> list[tuple[str, str]]:
    """Exchanges until they hold `tokens` tokens as the plugin counts them."""
    pairs: list[tuple[str, str]] = []
    total = 0
    while total < tokens:
        pairs.append(exchange(rig.rng))
        total += sum(rig.runtime.counter.count(t) + MESSAGE_OVERHEAD_TOKENS for t in pairs[-1])
    return pairs


async def one_turn(rig: Rig, group_id: int) -> int:
    """Overhead of one addressed turn in nanoseconds."""
    bot, clock = rig.bot, rig.clock
    event = addressed(chat_line(rig.rng, 50, 150), group_id, rig.rng)
    clock.reset()
    sent = bot.sent_count
    start = time.perf_counter_ns()
    await handle_event(bot, event)
    if bot.sent_count != sent + 1 or clock.calls != 1:
        raise RuntimeError(
            f"group {group_id}: {bot.sent_count - sent} replies, {clock.calls} LLM calls"
        )
    return bot.last_sent_ns - start - clock.ns


async def measure(
    rig: Rig, label: str, pairs: list[tuple[str, str]], group_id: int, turns: int, warmup: int
) -> SizeResult:
    """A cold turn (loads the window from SQLite), then `warmup` + `turns` measured ones."""
    key = group_key(group_id)
    await prefill_history(rig.runtime, key, pairs)
    cold = await one_turn(rig, group_id)
    window = session_bot(rig.runtime, key).window
    saved = list(window.messages)
    result = SizeResult(label, len(window), window.tokens, cold)
    gc.collect()
    for index in range(warmup + turns):
        window.replace(saved)
        overhead = await one_turn(rig, group_id)
        forget_requests(rig.llm)
        if index >= warmup:
            result.overhead_ns.append(overhead)
            result.llm_ns.append(rig.clock.ns)
    window.replace(saved)
    return result


def report(result: SizeResult) -> None:
    """Print one window size's figures."""
    p = f"[{result.label}]"
    print(f"{p} window: {result.messages} messages, {result.tokens} tokens")
    print(f"{p} cold first turn overhead: {ms(result.cold_ns):.2f} ms")
    print(latency(f"{p} overhead", result.overhead_ns))
    print(latency(f"{p} LLM round trip (baseline, excluded)", result.llm_ns))


async def run(bench: Bench) -> None:
    """Measure both window sizes, then print the ratio and the verdicts."""
    rng = random.Random(20261130)
    turns, warmup = (20, 2) if bench.quick else (300, 10)
    with fake_llm(lambda body: text(REPLY_TEXT)) as llm:
        async with plugin_runtime(
            llm,
            bench.work_dir / "aimemory.db",
            aimemory_max_context_tokens=BUDGET_TOKENS,
            aimemory_compress_threshold=COMPRESS_THRESHOLD,
        ) as runtime:
            rig = Rig(runtime, CountingBot(), time_llm_calls(runtime), llm, rng)
            small = await measure(rig, "10", [exchange(rng) for _ in range(5)], 501, turns, warmup)
            report(small)
            full_pairs = exchanges_up_to(rig, FULL_FILL_TOKENS)
            full = await measure(rig, "full", full_pairs, 502, max(5, turns // 3), warmup)
            report(full)
    if not FULL_TOKENS[0] <= full.tokens <= FULL_TOKENS[1]:
        print(f"warning: the full window holds {full.tokens} tokens, outside {FULL_TOKENS}")
    small_p50 = ms(percentile(small.overhead_ns, 0.5))
    full_p50 = ms(percentile(full.overhead_ns, 0.5))
    print(f"ratio full / 10 overhead p50: {full_p50 / small_p50:.1f}x")
    label = f"p50 {small_p50:.3f} ms <= {TARGET_SMALL_MS} ms at 10 messages"
    verdict(label, small_p50 <= TARGET_SMALL_MS)
    verdict(
        f"p50 {full_p50:.3f} ms <= {TARGET_FULL_MS} ms at the full window",
        full_p50 <= TARGET_FULL_MS,
    )


if __name__ == "__main__":
    main(__doc__, run)
