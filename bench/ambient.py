"""Throughput of unaddressed group messages: the plugin's cost on a busy group's chatter.

Drives the same OneBot v11 group messages (none addressed to the bot) through
`nonebot.message.handle_event`, one after another, in separate NoneBot processes (one
subprocess of this script per `--mode`, since a loaded plugin cannot be unloaded):
  (a) plugin:      the plugin loaded, its runtime started (PluginHarness, FakeOpenAI on
                   127.0.0.1, SQLite in a temp dir), group auto-clear on with the default 30;
  (b) baseline:    no plugin, only a minimal `on_message` matcher that increments a counter;
  (c) plugin-idle: diagnostic, the plugin loaded but its runtime not started, so its handler
                   returns at once: what NoneBot itself spends dispatching to its matchers.
Three event mixes of N messages each (default 10 000), on fresh group ids after a warm-up
on other groups. In the first two, every group talked to the bot just before (its window
holds an exchange, as an addressed turn leaves it; set up outside the timing):
  spread:      round-robin over 50 groups (each crosses the threshold once: 50 auto-clears,
               a counter flush every 10 messages per group until then);
  clear-heavy: round-robin over N/30 groups (every group reaches 30: one auto-clear per 30
               messages, the worst case);
  silent:      round-robin over 50 groups that never talked to the bot (nothing to clear,
               so nothing is written).
The time includes waiting for the auto-clear and counter-flush tasks the messages spawned.

Target: plugin throughput >= 90 % of the baseline (ratio a/b) for each mix.

Run: /tmp/venv/bin/python bench/ambient.py [--quick] [--messages N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (
    SELF_ID,
    RecordingBot,
    chat_line,
    init_nonebot,
    runtime_of,
    start_plugin,
    verdict,
)

TARGET_RATIO = 0.90
SPREAD_GROUPS = 50
AUTOCLEAR_AFTER = 30
WARMUP_MESSAGES = 2000
RESULT_PREFIX = "RESULT "
# plugin-noclear (not run by default): runtime started, auto-clear off.
MODES = ("plugin", "baseline", "plugin-idle", "plugin-noclear")


def build_events(count: int, groups: int, first_group_id: int, seed: int) -> list[Any]:
    """`count` unaddressed group messages, round-robin over `groups` groups; ~10 % mention
    another member, ~5 % carry an image, like ordinary group chatter."""
    from nonebot.adapters.onebot.v11 import Message, MessageSegment

    from tests.fakes.events import group_message

    rng = random.Random(seed)
    events = []
    for index in range(count):
        user_id = 3000 + rng.randrange(200)
        content = Message(MessageSegment.text(chat_line(rng, 5, 60)))
        roll = rng.random()
        if roll < 0.10:
            content = MessageSegment.at(user_id + 1) + content
        elif roll < 0.15:
            content += MessageSegment.image(f"http://127.0.0.1:9/{index}.jpg")  # never fetched
        events.append(
            group_message(
                content,
                group_id=first_group_id + index % groups,
                user_id=user_id,
                card=f"群友{user_id % 100}",
                to_me=False,
            )
        )
    return events


class PluginProbe:
    """Reads how many auto-clears and batched writes the plugin's runtime performed."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    @property
    def clears(self) -> int:
        return self.runtime.autoclear.clears_done

    @property
    def flushes(self) -> int:
        return self.runtime.autoclear.batches_written

    async def settle(self) -> None:
        """Wait for the clears and flushes spawned so far."""
        while self.runtime.autoclear._tasks:
            await asyncio.gather(*list(self.runtime.autoclear._tasks))


async def give_context(runtime: Any, group_ids: range) -> None:
    """What an addressed turn leaves behind in each group: a stored exchange, a count of 0."""
    from nonebot_plugin_aimemory.engine.messages import Message

    for group_id in group_ids:
        exchange = [
            Message("user", "[2026-11-30 14:05] 小明(2001)：在吗"),
            Message("assistant", "在的"),
        ]
        await runtime.history.append(f"g:{group_id}", exchange)
        runtime.autoclear.note_addressed(str(group_id))


async def drive(bot: RecordingBot, events: list[Any], probe: PluginProbe | None) -> float:
    """Handle `events` one after another; seconds until they and their background work end."""
    from nonebot.message import handle_event

    gc.collect()
    start = time.perf_counter_ns()
    for event in events:
        await handle_event(bot, event)
    if probe is not None:
        await probe.settle()
    return (time.perf_counter_ns() - start) / 1e9


async def run_mode(mode: str, bot: RecordingBot, messages: int, data_dir: str) -> dict[str, Any]:
    from tests.fakes.openai_server import FakeOpenAI

    handled = [0]
    if mode == "baseline":
        from nonebot import on_message

        counter = on_message(priority=90, block=False)

        @counter.handle()
        async def _count() -> None:
            handled[0] += 1

    mixes = {
        "spread": SPREAD_GROUPS,
        "clear-heavy": max(1, messages // AUTOCLEAR_AFTER),
        "silent": SPREAD_GROUPS,
    }
    results: dict[str, Any] = {}
    with FakeOpenAI(api_key="sk-test") as llm:
        harness = probe = None
        if mode in ("plugin", "plugin-noclear"):
            threshold = AUTOCLEAR_AFTER if mode == "plugin" else 0
            harness = await start_plugin(
                f"{data_dir}/aimemory.db", llm, aimemory_group_autoclear_after=threshold
            )
            probe = PluginProbe(runtime_of(harness))
        try:
            warmup = build_events(min(WARMUP_MESSAGES, messages), SPREAD_GROUPS, 1, seed=1)
            await drive(bot, warmup, probe)
            next_group = 100_000
            for seed, (mix, groups) in enumerate(mixes.items(), start=2):
                events = build_events(messages, groups, next_group, seed=seed)
                if harness is not None and mix != "silent":
                    await give_context(runtime_of(harness), range(next_group, next_group + groups))
                next_group += groups
                before = (probe.clears, probe.flushes) if probe else (0, 0)
                seconds = await drive(bot, events, probe)
                after = (probe.clears, probe.flushes) if probe else (0, 0)
                results[mix] = {
                    "rate": messages / seconds,
                    "groups": groups,
                    "clears": after[0] - before[0],
                    "flushes": after[1] - before[1],
                }
                del events
            if harness is not None:
                results["resident_sessions"] = len(runtime_of(harness).sessions)
            else:
                results["resident_sessions"] = 0
        finally:
            if harness is not None:
                await harness.stop()
    if bot.sent_count:
        raise RuntimeError(f"{mode}: the bot answered {bot.sent_count} unaddressed messages")
    if mode == "baseline":
        expected = len(warmup) + messages * len(mixes)
        if handled[0] != expected:
            raise RuntimeError(f"baseline matcher ran {handled[0]} times, expected {expected}")
    return results


def child(mode: str, messages: int) -> None:
    with tempfile.TemporaryDirectory(prefix="aimemory-bench-") as data_dir:
        bot = init_nonebot(data_dir, load_plugin=mode != "baseline")
        assert bot.self_id == SELF_ID
        results = asyncio.run(run_mode(mode, bot, messages, data_dir))
    print(RESULT_PREFIX + json.dumps(results), flush=True)


def run_child(mode: str, messages: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--mode", mode, "--messages", str(messages)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        sys.stderr.write(completed.stdout + completed.stderr)
        raise SystemExit(f"{mode} run failed with exit code {completed.returncode}")
    for line in completed.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    raise SystemExit(f"{mode} run printed no result")


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mix, the run with the median rate (runs alternate modes, so a burst of machine
    noise does not land on one mode only)."""
    merged: dict[str, Any] = {"resident_sessions": runs[-1]["resident_sessions"]}
    for mix in ("spread", "clear-heavy", "silent"):
        ordered = sorted((run[mix] for run in runs), key=lambda r: r["rate"])
        merged[mix] = ordered[len(ordered) // 2]
    return merged


def parent(messages: int, repeats: int) -> None:
    print(f"messages per mix: {messages}, runs per mode: {repeats} (alternating; median shown)")
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "plugin-idle": [], "plugin": []}
    for _ in range(repeats):
        for mode in runs:
            runs[mode].append(run_child(mode, messages))
    baseline, idle, plugin = (median_of(runs[mode]) for mode in runs)
    verdicts = []
    for mix in ("spread", "clear-heavy", "silent"):
        a, b, c = plugin[mix], baseline[mix], idle[mix]
        per_a, per_b, per_c = (1e6 / r["rate"] for r in (a, b, c))
        ratio = a["rate"] / b["rate"]
        print(f"[{mix}] groups: {a['groups']}")
        print(f"[{mix}] (a) plugin msg/s: {a['rate']:.0f}")
        print(f"[{mix}] (b) baseline msg/s: {b['rate']:.0f}")
        print(f"[{mix}] (c) plugin-idle msg/s: {c['rate']:.0f}")
        print(f"[{mix}] (a) per message us: {per_a:.1f}")
        print(f"[{mix}] (b) per message us: {per_b:.1f}")
        print(f"[{mix}] (c) per message us: {per_c:.1f}")
        print(f"[{mix}] NoneBot dispatch to the plugin's matchers us (c-b): {per_c - per_b:.1f}")
        print(f"[{mix}] plugin's own code us (a-c): {per_a - per_c:.1f}")
        print(f"[{mix}] auto-clears: {a['clears']}")
        print(f"[{mix}] batched writes (counters + clears): {a['flushes']}")
        print(f"[{mix}] ratio a/b: {ratio:.1%}")
        print(f"[{mix}] ratio c/b: {c['rate'] / b['rate']:.1%}")
        label = f"{mix} ratio {ratio:.1%} >= {TARGET_RATIO:.0%}"
        verdicts.append(verdict(label, ratio >= TARGET_RATIO))
    print(f"resident sessions after the run (plugin): {plugin['resident_sessions']}")
    for line in verdicts:
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 messages per mix")
    parser.add_argument("--messages", type=int, default=None, help="messages per mix")
    parser.add_argument("--repeats", type=int, default=None, help="runs per mode (default 3)")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    messages = args.messages or (500 if args.quick else 10_000)
    if args.mode:
        child(args.mode, messages)
    else:
        parent(messages, args.repeats or (1 if args.quick else 3))


if __name__ == "__main__":
    main()
