"""Plugin overhead per addressed turn, with an instant local LLM.

Measures, for a group message with `to_me=True` driven through `nonebot.message.handle_event`:
overhead = (event in -> `send_msg` called) - (time spent awaiting `runtime.llm.http.post`),
i.e. everything the plugin does around the LLM's own round trip (NoneBot dispatch, memory
lookup, building the request, parsing the answer, persisting the turn, sending the reply).
The fake LLM (tests/fakes/openai_server.FakeOpenAI on 127.0.0.1) answers a fixed short
text at once. The wrapped `post` is the shared HTTP client, so any compressor call would be
counted as LLM time too (none happens: see below).

Window sizes, pre-filled in the history store before the session loads:
  10:    10 messages of 50-150 characters;
  1000:  1 000 messages of 20-80 characters (~75k tokens);
  full:  50-150-character lines until `bot.window.tokens` is 120k-127k (~950 messages).
The compressor is kept idle (budget 136 000 tokens, threshold 0.95, so it triggers at
~129k) so that every measured turn is a plain turn; with the default 128k budget and
threshold 0.8 a real window is folded before it passes ~102k tokens. The window is restored
after each turn, so every measured turn sees the same window (+2 messages of the first,
cold turn, which is reported separately). No long-term memories are stored (auto-inject
runs its search and finds nothing).

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

from bench._common import (
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
FULL_FILL_TOKENS = 124_000
BUDGET_TOKENS = 136_000
COMPRESS_THRESHOLD = 0.95
LINE_PREFIX = "[2026-11-30 14:05] {name}({user_id})："
SPEAKERS = (("小明", 2001), ("阿强", 2002), ("Lily", 2003), ("老王", 2004), ("糖糖", 2005))


@dataclass
class TurnClock:
    """What the wrapped calls took during one turn (nanoseconds)."""

    llm_ns: int = 0
    llm_calls: int = 0
    first_llm_start_ns: int = 0
    last_llm_end_ns: int = 0
    body_bytes: int = 0
    append_ns: int = 0
    memory_ns: int = 0

    def reset(self) -> None:
        self.llm_ns = self.llm_calls = self.first_llm_start_ns = self.last_llm_end_ns = 0
        self.body_bytes = self.append_ns = self.memory_ns = 0


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
    append_ns: list[int] = field(default_factory=list)
    memory_ns: list[int] = field(default_factory=list)


def time_llm_posts(runtime: Any, clock: TurnClock) -> None:
    """Wrap the shared `http.post` so the time spent awaiting the LLM is recorded."""
    http = runtime.llm.http
    original = http.post

    async def timed_post(*args: Any, **kwargs: Any) -> Any:
        clock.llm_calls += 1
        clock.body_bytes = len(kwargs.get("content") or b"")
        start = time.perf_counter_ns()
        if not clock.first_llm_start_ns:
            clock.first_llm_start_ns = start
        try:
            return await original(*args, **kwargs)
        finally:
            end = time.perf_counter_ns()
            clock.llm_ns += end - start
            clock.last_llm_end_ns = end

    http.post = timed_post


def time_method(obj: Any, name: str, clock: TurnClock, field_name: str) -> None:
    """Wrap the coroutine method `obj.name`, adding its time to `clock.<field_name>`."""
    original = getattr(obj, name)

    async def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return await original(*args, **kwargs)
        finally:
            elapsed = time.perf_counter_ns() - start
            setattr(clock, field_name, getattr(clock, field_name) + elapsed)

    setattr(obj, name, timed)


def history_messages(
    rng: random.Random,
    counter: Any,
    *,
    count: int | None = None,
    min_tokens: int | None = None,
    chars: tuple[int, int] = (50, 150),
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
            Message(
                "user", LINE_PREFIX.format(name=name, user_id=user_id) + chat_line(rng, *chars)
            ),
            Message("assistant", chat_line(rng, *chars)),
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
    clock: TurnClock,
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

    async def one_turn(event: Any) -> tuple[int, TurnClock]:
        clock.reset()
        sent_before = bot.sent_count
        start = time.perf_counter_ns()
        await handle_event(bot, event)
        if bot.sent_count != sent_before + 1:
            raise RuntimeError(f"turn in {key}: {bot.sent_count - sent_before} replies sent")
        if clock.llm_calls != 1:
            raise RuntimeError(f"turn in {key}: {clock.llm_calls} LLM calls (compression?)")
        return start, clock

    # The cold turn loads the window from SQLite, tokenises and serialises every message.
    start, _ = await one_turn(events[0])
    cold_overhead = bot.last_sent_ns - start - clock.llm_ns
    clear_llm_records(harness.llm)
    session = runtime.sessions.get(key)
    assert session is not None
    window = session.bot.window
    saved = list(window.messages)
    result = SizeResult(label, len(window), window.tokens, clock.body_bytes, cold_overhead)
    gc.collect()
    for index, event in enumerate(events[1:]):
        window.replace(saved)
        if profiler is not None and index >= warmup:
            profiler.enable()
        start, _ = await one_turn(event)
        if profiler is not None:
            profiler.disable()
        clear_llm_records(harness.llm)
        if index < warmup:
            continue
        sent = bot.last_sent_ns
        result.overhead_ns.append(sent - start - clock.llm_ns)
        result.llm_ns.append(clock.llm_ns)
        result.before_llm_ns.append(clock.first_llm_start_ns - start)
        result.after_llm_ns.append(sent - clock.last_llm_end_ns)
        result.append_ns.append(clock.append_ns)
        result.memory_ns.append(clock.memory_ns)
    result.body_bytes = clock.body_bytes
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
    print(f"[{p}]     of which memory lookup p50 ms: {ms(percentile(result.memory_ns, 0.5)):.3f}")
    print(f"[{p}]   after LLM call p50 ms: {ms(percentile(result.after_llm_ns, 0.5)):.3f}")
    print(f"[{p}]     of which SQLite append p50 ms: {ms(percentile(result.append_ns, 0.5)):.3f}")
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
        harness = await start_plugin(
            f"{data_dir}/aimemory.db",
            llm,
            aimemory_max_context_tokens=BUDGET_TOKENS,
            aimemory_compress_threshold=COMPRESS_THRESHOLD,
        )
        runtime = runtime_of(harness)
        clock = TurnClock()
        time_llm_posts(runtime, clock)
        time_method(runtime.history, "append", clock, "append_ns")
        if runtime.memory is not None:
            time_method(runtime.memory, "relevant", clock, "memory_ns")
        counter = runtime.counter
        print(f"tokenizer: {'tiktoken cl100k' if counter.loaded else 'estimate'}")
        histories = {
            "10": history_messages(rng, counter, count=10),
            "1000": history_messages(rng, counter, count=1000, chars=(20, 80)),
            "full": history_messages(rng, counter, min_tokens=FULL_FILL_TOKENS),
        }
        results: dict[str, SizeResult] = {}
        profiler = cProfile.Profile() if profile else None
        try:
            for group_id, (label, history) in enumerate(histories.items(), start=501):
                results[label] = await measure_size(
                    label,
                    bot=bot,
                    harness=harness,
                    clock=clock,
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
        verdict(
            f"p50 {small_p50:.3f} ms <= {TARGET_SMALL_MS} ms at 10", small_p50 <= TARGET_SMALL_MS
        )
    )
    print(
        verdict(f"p50 {full_p50:.3f} ms <= {TARGET_FULL_MS} ms at full", full_p50 <= TARGET_FULL_MS)
    )


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
