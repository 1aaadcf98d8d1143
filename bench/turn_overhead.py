"""Plugin overhead per addressed turn, with an instant local LLM.

Measures, for a group message with `to_me=True` driven through `nonebot.message.handle_event`:
overhead = (event in -> `send_msg` called) - (time spent awaiting `runtime.llm.http.post`),
i.e. everything the plugin does around the LLM's own round trip (matching, building the
request, parsing the answer, persisting the turn, sending the reply). The fake LLM
(tests/fakes/openai_server.FakeOpenAI on 127.0.0.1) answers a fixed short text at once.

Window sizes: 10 messages, 1 000 messages and a full 128k-token window (filled to
`bot.window.tokens` in 120k-127k with 50-150-character Chinese chat lines). The window is
restored after each turn, so every measured turn sees the same window (+2 messages of the
first, cold turn, which is reported separately).

Targets: overhead p50 <= 3 ms at 10 messages, <= 10 ms at the full window.

Run: /tmp/venv/bin/python bench/turn_overhead.py [--quick] [--profile 10|1000|full]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (  # noqa: E402
    RecordingBot,
    chat_line,
    clear_llm_records,
    init_nonebot,
    ms,
    percentile,
    runtime_of,
    start_plugin,
    verdict,
)

REPLY_TEXT = "收到～这个我记下了，有需要随时叫我。"
TARGET_SMALL_MS = 3.0
TARGET_FULL_MS = 10.0
FULL_MIN_TOKENS = 120_000
FULL_MAX_TOKENS = 127_000
LINE_PREFIX = "[2026-11-30 14:05] {name}({user_id})："
SPEAKERS = (("小明", 2001), ("阿强", 2002), ("Lily", 2003), ("老王", 2004), ("糖糖", 2005))


@dataclass
class PostTimer:
    """What the wrapped `http.post` saw during one turn."""

    total_ns: int = 0
    first_start_ns: int = 0
    last_end_ns: int = 0
    body_bytes: int = 0
    calls: int = 0

    def reset(self) -> None:
        self.total_ns = self.first_start_ns = self.last_end_ns = self.body_bytes = self.calls = 0


@dataclass
class SizeResult:
    label: str
    messages: int
    tokens: int
    body_bytes: int
    cold_overhead_ns: int
    overhead_ns: list[int] = field(default_factory=list)
    llm_ns: list[int] = field(default_factory=list)
    before_llm_ns: list[int] = field(default_factory=list)
    after_llm_ns: list[int] = field(default_factory=list)


def time_llm_posts(runtime: Any, timer: PostTimer) -> None:
    """Wrap the LLM client's `http.post` so the time spent awaiting it is recorded."""
    http = runtime.llm.http
    original = http.post

    async def timed_post(*args: Any, **kwargs: Any) -> Any:
        timer.calls += 1
        timer.body_bytes = len(kwargs.get("content") or b"")
        start = time.perf_counter_ns()
        if not timer.first_start_ns:
            timer.first_start_ns = start
        try:
            return await original(*args, **kwargs)
        finally:
            end = time.perf_counter_ns()
            timer.total_ns += end - start
            timer.last_end_ns = end

    http.post = timed_post


def history_messages(
    rng: random.Random, counter: Any, *, count: int | None = None, min_tokens: int | None = None
) -> list[Any]:
    """User/assistant pairs of chat lines: `count` messages, or pairs until `min_tokens`."""
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tokens import message_tokens

    messages: list[Message] = []
    tokens = 0
    while True:
        if count is not None and len(messages) >= count:
            break
        if min_tokens is not None and tokens >= min_tokens:
            break
        name, user_id = rng.choice(SPEAKERS)
        pair = (
            Message("user", LINE_PREFIX.format(name=name, user_id=user_id) + chat_line(rng)),
            Message("assistant", chat_line(rng)),
        )
        for message in pair:
            tokens += message_tokens(message, counter)
        messages.extend(pair)
    return messages


async def measure_size(
    label: str,
    *,
    bot: RecordingBot,
    harness: Any,
    timer: PostTimer,
    history: list[Any],
    group_id: int,
    warmup: int,
    turns: int,
    rng: random.Random,
    profiler: cProfile.Profile | None = None,
) -> SizeResult:
    """Persist `history`, then run a cold turn, `warmup` turns and `turns` measured turns."""
    from nonebot.message import handle_event

    from tests.fakes.events import group_message

    runtime = runtime_of(harness)
    key = f"g:{group_id}"
    await runtime.history.append(key, history)
    events = []
    for _ in range(1 + warmup + turns):
        name, user_id = rng.choice(SPEAKERS)
        events.append(
            group_message(chat_line(rng), group_id=group_id, user_id=user_id, card=name, to_me=True)
        )

    async def one_turn(event: Any) -> tuple[int, int, int, int]:
        timer.reset()
        sent_before = bot.sent_count
        start = time.perf_counter_ns()
        await handle_event(bot, event)
        if bot.sent_count != sent_before + 1 or timer.calls != 1:
            raise RuntimeError(f"turn in {key}: {bot.sent_count - sent_before} replies sent")
        sent = bot.last_sent_ns
        overhead = sent - start - timer.total_ns
        return overhead, timer.total_ns, timer.first_start_ns - start, sent - timer.last_end_ns

    # The cold turn loads the window from SQLite, tokenises and serialises every message.
    cold_overhead, *_ = await one_turn(events[0])
    clear_llm_records(harness.llm)
    session = runtime.sessions.get(key)
    assert session is not None
    window = session.bot.window
    saved = list(window.messages)
    result = SizeResult(label, len(window), window.tokens, timer.body_bytes, cold_overhead)
    gc.collect()
    for index, event in enumerate(events[1:]):
        window.replace(saved)
        if profiler is not None and index >= warmup:
            profiler.enable()
        overhead, llm, before, after = await one_turn(event)
        if profiler is not None:
            profiler.disable()
        clear_llm_records(harness.llm)
        if index < warmup:
            continue
        result.overhead_ns.append(overhead)
        result.llm_ns.append(llm)
        result.before_llm_ns.append(before)
        result.after_llm_ns.append(after)
    result.body_bytes = timer.body_bytes
    window.replace(saved)
    return result


def report(result: SizeResult) -> None:
    p = result.label
    print(f"[{p}] window messages: {result.messages}")
    print(f"[{p}] window tokens: {result.tokens}")
    print(f"[{p}] request body bytes: {result.body_bytes}")
    print(f"[{p}] measured turns: {len(result.overhead_ns)}")
    print(f"[{p}] cold first turn overhead ms: {ms(result.cold_overhead_ns):.2f}")
    print(f"[{p}] overhead p50 ms: {ms(percentile(result.overhead_ns, 0.5)):.3f}")
    print(f"[{p}] overhead p99 ms: {ms(percentile(result.overhead_ns, 0.99)):.3f}")
    print(f"[{p}]   before LLM call p50 ms: {ms(percentile(result.before_llm_ns, 0.5)):.3f}")
    print(f"[{p}]   after LLM call p50 ms: {ms(percentile(result.after_llm_ns, 0.5)):.3f}")
    print(f"[{p}] LLM round trip p50 ms (excluded): {ms(percentile(result.llm_ns, 0.5)):.3f}")


async def run(bot: RecordingBot, quick: bool, profile: str | None, data_dir: str) -> None:
    from tests.fakes.openai_server import FakeOpenAI, text

    rng = random.Random(20261130)
    turns = {"10": 300, "1000": 150, "full": 100}
    if quick:
        turns = {"10": 20, "1000": 8, "full": 5}
    warmup = 2 if quick else 10
    with FakeOpenAI(api_key="sk-test") as llm:
        llm.responder = lambda body: text(REPLY_TEXT)
        harness = await start_plugin(f"{data_dir}/aimemory.db", llm)
        runtime = runtime_of(harness)
        timer = PostTimer()
        time_llm_posts(runtime, timer)
        counter = runtime.counter
        print(f"tokenizer: {'tiktoken cl100k' if counter.loaded else 'estimate'}")
        histories = {
            "10": history_messages(rng, counter, count=10),
            "1000": history_messages(rng, counter, count=1000),
            "full": history_messages(rng, counter, min_tokens=FULL_MIN_TOKENS),
        }
        results: dict[str, SizeResult] = {}
        profiler = cProfile.Profile() if profile else None
        try:
            for group_id, (label, history) in enumerate(histories.items(), start=501):
                results[label] = await measure_size(
                    label,
                    bot=bot,
                    harness=harness,
                    timer=timer,
                    history=history,
                    group_id=group_id,
                    warmup=warmup,
                    turns=turns[label],
                    rng=rng,
                    profiler=profiler if profile == label else None,
                )
                report(results[label])
        finally:
            await harness.stop()
    full = results["full"]
    if not FULL_MIN_TOKENS <= full.tokens <= FULL_MAX_TOKENS:
        print(f"warning: full window has {full.tokens} tokens, outside the intended range")
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).sort_stats("tottime")
        stats.print_stats(30)
        print(f"--- cProfile of the measured turns at {profile} (main thread, by tottime) ---")
        print(out.getvalue())
    small_p50 = ms(percentile(results["10"].overhead_ns, 0.5))
    full_p50 = ms(percentile(full.overhead_ns, 0.5))
    print(f"ratio full/10 overhead p50: {full_p50 / small_p50:.1f}x")
    print(
        verdict(f"p50 {small_p50:.3f} ms <= {TARGET_SMALL_MS} ms at 10", small_p50 <= TARGET_SMALL_MS)
    )
    print(verdict(f"p50 {full_p50:.3f} ms <= {TARGET_FULL_MS} ms at full", full_p50 <= TARGET_FULL_MS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few turns per size (smoke run)")
    parser.add_argument("--profile", choices=("10", "1000", "full"), help="cProfile one size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aimemory-bench-") as data_dir:
        bot = init_nonebot(data_dir)
        asyncio.run(run(bot, args.quick, args.profile, data_dir))


if __name__ == "__main__":
    main()
