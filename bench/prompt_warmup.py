"""`python -m bench.prompt_warmup --model-url URL --model NAME`: on a local model server of
one slot (llama.cpp), how long a member waits for the turn after background work, with the
prompt warm-up (engine/prompt_warmup.py) and without it in the same run. Each round: two
turns in a group, a review's call (it takes the slot), a pause, then the turn measured;
the two settings take rounds in turn, each on a database of its own."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from bench import harness as h
from tests.chatlog.helpers import said
from tests.fakes.bots import RecordingBot

ROUNDS, QUICK_ROUNDS = 4, 1
PAUSE_SECONDS = 20.0  # a member's next message minutes later, shortened: the lull is 2 s
CHAT = ("我们周六去爬山吧，", "记得带水和雨衣，", "那几点出发？")
SPEEDUP_TARGET = 3.0


async def measured_turn(bench: h.Bench, round_number: int, warm_up: bool) -> float:
    """One round with the warm-up on or off: the seconds of its last turn."""
    from nonebot_plugin_aimemory.engine.messages import system, user

    db_path = bench.work_dir / f"round-{round_number}-{warm_up}.db"
    settings = {
        "aimemory_model": bench.args.model,
        "aimemory_request_timeout": 180.0,
        "aimemory_prompt_warmup": warm_up,
    }
    async with h.plugin_runtime(bench.args.model_url, db_path, None, **settings) as runtime:
        bot = RecordingBot()
        for line in CHAT[:2]:
            await bot.receive(said(f"{line}第{round_number}次", to_me=True))
        reviewer = runtime.llm.for_role("reviewer")
        await reviewer.complete([system("你是记忆整理员"), user("整理：周六爬山")], context="bench")
        await asyncio.sleep(PAUSE_SECONDS)
        asked = time.monotonic()
        await bot.receive(said(CHAT[2], to_me=True))
        return time.monotonic() - asked


async def run(bench: h.Bench) -> None:
    """The rounds, the settings alternating; the medians and the verdict."""
    waits: dict[bool, list[float]] = {True: [], False: []}
    for round_number in range(QUICK_ROUNDS if bench.quick else ROUNDS):
        for warm_up in (round_number % 2 == 0, round_number % 2 == 1):
            waits[warm_up].append(await measured_turn(bench, round_number, warm_up))
            print(
                f"round {round_number}, warm-up {'on' if warm_up else 'off'}: "
                f"{waits[warm_up][-1]:.1f} s",
                flush=True,
            )
    on, off = statistics.median(waits[True]), statistics.median(waits[False])
    print(
        f"the turn after background work, median: {on:.1f} s with the warm-up, "
        f"{off:.1f} s without ({off / max(on, 1e-9):.1f}x)"
    )
    met = off >= SPEEDUP_TARGET * on
    h.verdict(f"warm-up at least {SPEEDUP_TARGET:g}x faster", met, quick=bench.quick)


def options(parser: argparse.ArgumentParser) -> None:
    """--model-url, --model."""
    parser.add_argument("--model-url", required=True, help="a local OpenAI-compatible server")
    parser.add_argument("--model", required=True, help="its model name")


if __name__ == "__main__":
    h.main(__doc__, run, options)
