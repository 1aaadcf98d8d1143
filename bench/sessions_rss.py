"""Resident memory after many distinct private users, in a fresh process per N: N users send
a message each (8 in flight), then VmRSS once the janitor has trimmed the cache to 128
sessions. N = 1 000 is the baseline, 10 000 the run.
Target: RSS after 10 000 users within 20 MB of the RSS after 1 000.
"""

from __future__ import annotations

import asyncio
import gc
import random
import time

from nonebot.message import handle_event

from bench import harness as h
from tests.fakes.events import private_message

TARGET_MB = 20.0
MAX_SESSIONS = 128
JANITOR_SECONDS = 0.05
IN_FLIGHT = 8
FIRST_USER_ID = 500_000
TRIM_TIMEOUT_SECONDS = 30.0
SETTINGS = {
    "aimemory_session_max_sessions": MAX_SESSIONS,
    "aimemory_janitor_interval_seconds": JANITOR_SECONDS,
}


async def measure_users(bench: h.Bench) -> dict[str, int]:
    """One child process: N users, then the RSS once the janitor has trimmed the cache."""
    users: int = (bench.child or {})["users"]
    rng, bot = random.Random(users), h.CountingBot()
    async with h.plugin(bench, "收到～", **SETTINGS) as (llm, runtime):
        for first in range(FIRST_USER_ID, FIRST_USER_ID + users, IN_FLIGHT):
            batch = range(first, min(first + IN_FLIGHT, FIRST_USER_ID + users))
            events = [private_message(h.chat_line(rng, 10, 80), user_id=u) for u in batch]
            await asyncio.gather(*(handle_event(bot, event) for event in events))
            llm.requests.clear()
        trim_deadline = time.perf_counter() + TRIM_TIMEOUT_SECONDS
        while len(runtime.sessions) > MAX_SESSIONS:
            if time.perf_counter() > trim_deadline:
                raise RuntimeError(f"{len(runtime.sessions)} sessions still resident")
            await asyncio.sleep(JANITOR_SECONDS)
        await asyncio.sleep(JANITOR_SECONDS * 5)
        gc.collect()
        rss_kb = h.rss_kib()
    if bot.sent_count != users:
        raise RuntimeError(f"{bot.sent_count} replies to {users} users")
    return {"users": users, "rss_kb": rss_kb}


async def run(bench: h.Bench) -> dict[str, int] | None:
    """Run the baseline and the measured process, then print the RSS and the verdict."""
    if bench.child is not None:
        return await measure_users(bench)
    sizes = (100, 500) if bench.quick else (1000, 10_000)
    baseline, measured = [await h.run_child("bench.sessions_rss", {"users": n}) for n in sizes]
    for r in (baseline, measured):
        print(f"[N={r['users']}] RSS {r['rss_kb'] / 1024:.1f} MB after the trim")
    difference_mb = (measured["rss_kb"] - baseline["rss_kb"]) / 1024
    label = f"RSS N={measured['users']} - N={baseline['users']} (the baseline) {difference_mb:.1f}"
    label += f" MB within {TARGET_MB:.0f} MB"
    h.verdict(label, abs(difference_mb) <= TARGET_MB, quick=bench.quick)
    return None


if __name__ == "__main__":
    h.main(__doc__, run)
