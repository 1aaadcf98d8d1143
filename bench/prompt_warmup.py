"""`python -m bench.prompt_warmup --model-url URL --model NAME [--saves]`: on a local model
server of one slot (llama.cpp), how long members wait where another request would push
their conversation out of the server's prompt cache, with the plugin's remedy and without
it, in the same run, the two settings taking rounds in turn, each on a database of its own.

- By default, the prompt warm-up (engine/prompt_warmup.py): two turns in a group, a
  review's call (it takes the slot), a pause, then the turn measured.
- `--saves`: the guard's check after the turn (memory/shared_guard.py,
  `aimemory_guard_check_after_turn`): a greeting, a turn asking the bot to remember
  something (the model saves it, or the plugin does), then the next message at once; the
  two turns measured together."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from bench import harness as h
from bench.real_model_proxy import RecordingProxy, Upstream
from tests.chatlog.helpers import said
from tests.fakes.bots import RecordingBot

ROUNDS, QUICK_ROUNDS = 4, 1
PAUSE_SECONDS = 20.0  # a member's next message minutes later, shortened: the lull is 2 s
CHAT = ("我们周六去爬山吧，", "记得带水和雨衣，", "那几点出发？")
SAVES = (
    "记住：我下周三要去杭州出差",
    "记住，我女儿叫朵朵",
    "请记住我对花生过敏",
    "记住我最喜欢的乐队是新裤子",
)
SPEEDUP_TARGET = {"aimemory_prompt_warmup": 3.0, "aimemory_guard_check_after_turn": 2.0}
Round = Callable[[RecordingBot, "h.Runtime", int], Awaitable[float]]


async def after_a_review(bot: RecordingBot, runtime: h.Runtime, round_number: int) -> float:
    """Two turns, a review's call, a pause: the seconds of the turn after them."""
    from nonebot_plugin_aimemory.engine.messages import system, user

    for line in CHAT[:2]:
        await bot.receive(said(f"{line}第{round_number}次", to_me=True))
    reviewer = runtime.llm.for_role("reviewer")
    await reviewer.complete([system("你是记忆整理员"), user("整理：周六爬山")], context="bench")
    await asyncio.sleep(PAUSE_SECONDS)
    return await timed(bot, CHAT[2])


async def a_save_and_the_next_turn(
    bot: RecordingBot, runtime: h.Runtime, round_number: int
) -> float:
    """A greeting, then a turn that saves and the member's next message at once: the
    seconds of those two turns."""
    await bot.receive(said(f"大家好，今天第{round_number}次来", to_me=True, user_id=20001))
    asked = SAVES[round_number % len(SAVES)]
    next_line = "那我刚才说的你记下了吗"
    return await timed(bot, asked, user_id=20001) + await timed(bot, next_line, user_id=20001)


async def timed(bot: RecordingBot, line: str, **fields: int) -> float:
    """The seconds the bot takes to answer `line`."""
    asked = time.monotonic()
    await bot.receive(said(line, to_me=True, **fields))
    return time.monotonic() - asked


async def measured(bench: h.Bench, setting: str, on: bool, round_number: int) -> float:
    """One round with `setting` on or off: the seconds its measured turns took. With
    `--saves` every request goes with temperature 0, so that both settings see the model
    answer alike (whether it saves, how many rounds it takes) and differ in waiting only."""
    measure: Round = a_save_and_the_next_turn if bench.args.saves else after_a_review
    db_path = bench.work_dir / f"round-{round_number}-{on}.db"
    settings = {"aimemory_model": bench.args.model, "aimemory_request_timeout": 180.0}
    fields = (("temperature", 0), ("seed", round_number)) if bench.args.saves else ()
    upstream = Upstream(bench.args.model_url.rstrip("/"), bench.args.model, fields)
    with RecordingProxy({"main": upstream}) as proxy:
        async with h.plugin_runtime(
            proxy.base_url, db_path, None, **settings, **{setting: on}
        ) as runtime:
            return await measure(RecordingBot(), runtime, round_number)


async def run(bench: h.Bench) -> None:
    """The rounds, the settings alternating; the medians and the verdict."""
    setting = "aimemory_guard_check_after_turn" if bench.args.saves else "aimemory_prompt_warmup"
    waits: dict[bool, list[float]] = {True: [], False: []}
    for round_number in range(QUICK_ROUNDS if bench.quick else ROUNDS):
        for on in (round_number % 2 == 0, round_number % 2 == 1):
            waits[on].append(await measured(bench, setting, on, round_number))
            print(f"round {round_number}, {setting}={on}: {waits[on][-1]:.1f} s", flush=True)
    with_it, without = statistics.median(waits[True]), statistics.median(waits[False])
    print(
        f"the measured turns, median: {with_it:.1f} s with {setting}, {without:.1f} s without "
        f"({without / max(with_it, 1e-9):.1f}x)"
    )
    target = SPEEDUP_TARGET[setting]
    met = without >= target * with_it
    h.verdict(f"{setting} at least {target:g}x faster", met, quick=bench.quick)


def options(parser: argparse.ArgumentParser) -> None:
    """--model-url, --model, --saves."""
    parser.add_argument("--model-url", required=True, help="a local OpenAI-compatible server")
    parser.add_argument("--model", required=True, help="its model name")
    parser.add_argument(
        "--saves", action="store_true", help="the guard's check after the turn instead"
    )


if __name__ == "__main__":
    h.main(__doc__, run, options)
