"""Plugin overhead per addressed turn at a 10-message and a full (~124k-token) window: event
in -> `send_msg` through `handle_event`, less the wait for the fake LLM's instant answer (the
baseline, shown beside); compressor idle, the window restored after each turn.
Targets: overhead p50 <= 3 ms at 10 messages, <= 10 ms at the full window.
"""

from __future__ import annotations

import gc
import random
import time
from dataclasses import dataclass
from typing import Any

from nonebot.message import handle_event

from bench import harness as h
from tests.fakes.openai_server import FakeOpenAI

TARGET_SMALL_MS, TARGET_FULL_MS = 3.0, 10.0
FULL_TOKENS = (120_000, 127_000)  # the window the full case should hold
FULL_FILL_TOKENS = 124_000
MESSAGE_OVERHEAD_TOKENS = 4
REPLY = "收到～这个我记下了，有需要随时叫我。"
SETTINGS = {"aimemory_max_context_tokens": 136_000, "aimemory_compress_threshold": 0.95}


@dataclass
class Rig:
    """The running plugin, its bot and LLM, how long its LLM calls took, the chat's rng."""

    llm: FakeOpenAI
    runtime: h.Runtime
    bot: h.CountingBot
    llm_ns: list[int]  # of each LLM call since the turn began
    rng: random.Random


def time_llm_calls(runtime: h.Runtime) -> list[int]:
    """Time the posts of the LLM clients' HTTP client: each call's ns lands in the list."""
    durations: list[int] = []
    post = runtime.llm.http.post_capped

    async def timed_post(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return await post(*args, **kwargs)
        finally:
            durations.append(time.perf_counter_ns() - start)

    runtime.llm.http.post_capped = timed_post  # type: ignore[method-assign]
    return durations


def exchange(rng: random.Random) -> tuple[str, str]:
    """A stored (user line, reply) pair, the user line in the plugin's speaker format."""
    name, user_id = rng.choice(h.SPEAKERS)
    line = f"[2026-11-30 14:05] {name}({user_id})：{h.chat_line(rng, 50, 150)}"
    return line, h.chat_line(rng, 50, 150)


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
    event = h.addressed(h.chat_line(rig.rng, 50, 150), group_id, rig.rng)
    rig.llm_ns.clear()
    sent = rig.bot.sent_count
    start = time.perf_counter_ns()
    await handle_event(rig.bot, event)
    if rig.bot.sent_count != sent + 1 or len(rig.llm_ns) != 1:
        replies = rig.bot.sent_count - sent
        raise RuntimeError(f"group {group_id}: {replies} replies, {len(rig.llm_ns)} LLM calls")
    return rig.bot.last_sent_ns - start - rig.llm_ns[0]


async def measure(
    rig: Rig, label: str, pairs: list[tuple[str, str]], group_id: int, turns: int, warmup: int
) -> tuple[float, int]:
    """A cold turn (loads the window), then `warmup` + `turns`; the p50 in ms, the tokens."""
    key = h.group_key(group_id)
    await h.prefill_history(rig.runtime, key, pairs)
    await one_turn(rig, group_id)
    session = rig.runtime.sessions.get(key)
    assert session is not None, key
    window = session.bot.window
    saved, messages, tokens = list(window.messages), len(window), window.tokens
    overhead: list[int] = []
    llm: list[int] = []
    gc.collect()
    for index in range(warmup + turns):
        window.replace(saved)
        sample = await one_turn(rig, group_id)
        rig.llm.requests.clear()
        if index >= warmup:
            overhead.append(sample)
            llm.append(rig.llm_ns[0])
    window.replace(saved)
    print(f"[{label}] window: {messages} messages, {tokens} tokens")
    print(h.latency(f"[{label}] overhead", overhead))
    print(h.latency(f"[{label}] LLM round trip (baseline, excluded)", llm))
    return h.ms(h.percentile(overhead, 0.5)), tokens


async def run(bench: h.Bench) -> None:
    """Measure both window sizes, then print the verdicts."""
    rng = random.Random(20261130)
    turns, warmup = (20, 2) if bench.quick else (300, 10)
    async with h.plugin(bench, REPLY, **SETTINGS) as (llm, runtime):
        rig = Rig(llm, runtime, h.CountingBot(), time_llm_calls(runtime), rng)
        small_pairs = [exchange(rng) for _ in range(5)]
        small_p50, _ = await measure(rig, "10", small_pairs, 501, turns, warmup)
        full_pairs = exchanges_up_to(rig, FULL_FILL_TOKENS)
        full_p50, tokens = await measure(rig, "full", full_pairs, 502, max(5, turns // 3), warmup)
    if not FULL_TOKENS[0] <= tokens <= FULL_TOKENS[1]:
        print(f"warning: the full window holds {tokens} tokens, outside {FULL_TOKENS}")
    label = f"p50 {small_p50:.3f} ms <= {TARGET_SMALL_MS} ms at 10 messages"
    h.verdict(label, small_p50 <= TARGET_SMALL_MS)
    label = f"p50 {full_p50:.3f} ms <= {TARGET_FULL_MS} ms at the full window"
    h.verdict(label, full_p50 <= TARGET_FULL_MS)


if __name__ == "__main__":
    h.main(__doc__, run)
