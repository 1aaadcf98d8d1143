"""Resident memory after many distinct private users: does it stay bounded by the session cap?

Each N runs in a fresh process: a new SQLite file, the fake LLM, the session cap at 128 and
the janitor every 0.05 s. N distinct private users each send one message and get one answer
through `nonebot.message.handle_event`, 8 turns in flight at a time. The run then waits until
the janitor has trimmed the cache to the cap, collects garbage and reads VmRSS from
/proc/self/status. N = 1 000 is the baseline, N = 10 000 the measured run (100 and 500 with
--quick).

Target: RSS after 10 000 users within 20 MB of the RSS after 1 000.
Run: python -m bench.sessions_rss [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
from typing import Any

from nonebot.message import handle_event

from bench.harness import (
    Bench,
    CountingBot,
    chat_line,
    fake_llm,
    forget_requests,
    main,
    plugin_runtime,
    rss_kib,
    run_child,
    verdict,
)
from tests.fakes.events import private_message
from tests.fakes.openai_server import text

TARGET_MB = 20.0
MAX_SESSIONS = 128
JANITOR_SECONDS = 0.05
IN_FLIGHT = 8
FIRST_USER_ID = 500_000
TRIM_TIMEOUT_SECONDS = 30.0


async def measure_users(bench: Bench) -> dict[str, Any]:
    """One child process: N users, then the RSS once the janitor has trimmed the cache."""
    users: int = (bench.child or {})["users"]
    rng = random.Random(users)
    bot = CountingBot()
    with fake_llm(lambda body: text("收到～")) as llm:
        async with plugin_runtime(
            llm,
            bench.work_dir / "aimemory.db",
            aimemory_session_max_sessions=MAX_SESSIONS,
            aimemory_janitor_interval_seconds=JANITOR_SECONDS,
        ) as runtime:
            gc.collect()
            start_kb = rss_kib()
            started = time.perf_counter()
            for first in range(0, users, IN_FLIGHT):
                batch = range(FIRST_USER_ID + first, FIRST_USER_ID + min(first + IN_FLIGHT, users))
                events = [private_message(chat_line(rng, 10, 80), user_id=u) for u in batch]
                await asyncio.gather(*(handle_event(bot, event) for event in events))
                forget_requests(llm)
            turns_per_second = users / (time.perf_counter() - started)
            trim_started = time.perf_counter()
            while len(runtime.sessions) > MAX_SESSIONS:
                if time.perf_counter() - trim_started > TRIM_TIMEOUT_SECONDS:
                    raise RuntimeError(f"{len(runtime.sessions)} sessions still resident")
                await asyncio.sleep(JANITOR_SECONDS)
            await asyncio.sleep(JANITOR_SECONDS * 5)
            gc.collect()
            result = {
                "users": users,
                "replies": bot.sent_count,
                "turns_per_second": turns_per_second,
                "resident_sessions": len(runtime.sessions),
                "start_kb": start_kb,
                "rss_kb": rss_kib(),
            }
    if result["replies"] != users:
        raise RuntimeError(f"{result['replies']} replies to {users} users")
    return result


async def run(bench: Bench) -> dict[str, Any] | None:
    """Run the baseline and the measured process, then print the RSS and the verdict."""
    if bench.child is not None:
        return await measure_users(bench)
    sizes = (100, 500) if bench.quick else (1000, 10_000)
    baseline, measured = (run_child("bench.sessions_rss", {"users": n}) for n in sizes)
    for r in (baseline, measured):
        print(
            f"[N={r['users']}] {r['replies']} replies at {r['turns_per_second']:.0f} turns/s; "
            f"{r['resident_sessions']} sessions resident after the trim; RSS "
            f"{r['start_kb'] / 1024:.1f} MB before the turns, {r['rss_kb'] / 1024:.1f} MB after"
        )
    difference_mb = (measured["rss_kb"] - baseline["rss_kb"]) / 1024
    sizes_label = f"N={measured['users']} - N={baseline['users']} (the baseline)"
    print(f"RSS difference {sizes_label}: {difference_mb:.1f} MB")
    label = f"RSS difference {difference_mb:.1f} MB within {TARGET_MB:.0f} MB"
    verdict(label, abs(difference_mb) <= TARGET_MB, quick=bench.quick)
    return None


if __name__ == "__main__":
    main(__doc__, run)
