"""Resident memory after many distinct private users: does it stay bounded by the session cap?

Each run is a fresh subprocess (fresh SQLite file in a temp dir, FakeOpenAI on 127.0.0.1,
`aimemory_session_max_sessions=128`, janitor every 0.05 s). N distinct private users each
send one message and get one answer through `nonebot.message.handle_event` (8 turns in
flight at a time). Then the run waits until the janitor has trimmed the cache to the cap,
runs `gc.collect()`, and reads VmRSS from /proc/self/status. Runs N = 1 000 and N = 10 000
and prints each RSS, the resident sessions, Python's allocated blocks, and the difference.

The memory reviewer's scheduler tick (default every 60 s) is pushed out of the run
(`aimemory_review_tick_seconds=3600`): otherwise it fires in the middle of the long run
only and the two runs are not comparable. After its RSS is read, the N = 1 000 run calls
one tick by hand and reports how many reviews it started at once and the peak number of
LLM requests in flight (a diagnostic of the reviewer, not part of the target).

Target: RSS of the two runs within 20 MB of each other.

Run: /tmp/venv/bin/python bench/sessions_rss.py [--quick]
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
    RecordingBot,
    chat_line,
    clear_llm_records,
    init_nonebot,
    runtime_of,
    start_plugin,
    verdict,
)

TARGET_MB = 20.0
MAX_SESSIONS = 128
JANITOR_SECONDS = 0.05
IN_FLIGHT = 8
FIRST_USER_ID = 500_000
RESULT_PREFIX = "RESULT "


def proc_status_kb(field: str) -> int:
    """A `kB` field of /proc/self/status (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


async def one_user(bot: RecordingBot, user_id: int, rng: random.Random) -> None:
    from nonebot.message import handle_event

    from tests.fakes.events import private_message

    before = bot.sent_count
    await handle_event(bot, private_message(chat_line(rng, 10, 80), user_id=user_id))
    if bot.sent_count == before:
        raise RuntimeError(f"user {user_id} got no reply")


async def wait_for_trim(runtime: Any, timeout_seconds: float = 30.0) -> float:
    """Seconds until the janitor has the cache at the cap (and a few sweeps more)."""
    start = time.perf_counter()
    while len(runtime.sessions) > MAX_SESSIONS:
        if time.perf_counter() - start > timeout_seconds:
            raise RuntimeError(f"{len(runtime.sessions)} sessions still resident")
        await asyncio.sleep(JANITOR_SECONDS)
    await asyncio.sleep(JANITOR_SECONDS * 5)
    return time.perf_counter() - start


async def review_tick_burst(runtime: Any) -> dict[str, Any]:
    """Run one review tick now; how many reviews start and how many LLM calls overlap."""
    if runtime.reviews is None:
        return {}
    http = runtime.llm.http
    original = http.post
    in_flight = [0, 0]  # now, peak

    async def counted_post(*args: Any, **kwargs: Any) -> Any:
        in_flight[0] += 1
        in_flight[1] = max(in_flight[1], in_flight[0])
        try:
            return await original(*args, **kwargs)
        finally:
            in_flight[0] -= 1

    http.post = counted_post
    start = time.perf_counter()
    started = await runtime.reviews.tick()
    await asyncio.gather(*list(runtime.reviews.running.values()), return_exceptions=True)
    http.post = original
    return {
        "reviews_started": len(started),
        "review_seconds": time.perf_counter() - start,
        "peak_llm_in_flight": in_flight[1],
    }


async def run_users(
    bot: RecordingBot, users: int, data_dir: str, review_tick: bool
) -> dict[str, Any]:
    from tests.fakes.openai_server import FakeOpenAI, text

    rng = random.Random(users)
    with FakeOpenAI(api_key="sk-test") as llm:
        llm.responder = lambda body: text("收到～")
        harness = await start_plugin(
            f"{data_dir}/aimemory.db",
            llm,
            aimemory_session_max_sessions=MAX_SESSIONS,
            aimemory_janitor_interval_seconds=JANITOR_SECONDS,
            aimemory_review_tick_seconds=3600,
        )
        runtime = runtime_of(harness)
        try:
            gc.collect()
            rss_start_kb = proc_status_kb("VmRSS")
            started = time.perf_counter()
            peak_sessions = 0
            for first in range(0, users, IN_FLIGHT):
                batch = range(first, min(first + IN_FLIGHT, users))
                await asyncio.gather(*(one_user(bot, FIRST_USER_ID + i, rng) for i in batch))
                peak_sessions = max(peak_sessions, len(runtime.sessions))
                clear_llm_records(llm)  # the fake keeps every request body otherwise
            turns_seconds = time.perf_counter() - started
            trim_seconds = await wait_for_trim(runtime)
            gc.collect()
            result = {
                "users": users,
                "replies": bot.sent_count,
                "turns_per_second": users / turns_seconds,
                "trim_seconds": trim_seconds,
                "resident_sessions": len(runtime.sessions),
                "peak_sessions": peak_sessions,
                "rss_start_kb": rss_start_kb,
                "rss_kb": proc_status_kb("VmRSS"),
                "hwm_kb": proc_status_kb("VmHWM"),
                "allocated_blocks": sys.getallocatedblocks(),
                "gc_objects": len(gc.get_objects()),
            }
            if review_tick:
                result.update(await review_tick_burst(runtime))
        finally:
            await harness.stop()
    return result


def child(users: int, review_tick: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="aimemory-bench-") as data_dir:
        bot = init_nonebot(data_dir)
        result = asyncio.run(run_users(bot, users, data_dir, review_tick))
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def run_child(users: int, *, review_tick: bool = False) -> dict[str, Any]:
    command = [sys.executable, __file__, "--users", str(users)]
    if review_tick:
        command.append("--review-tick")
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        sys.stderr.write(completed.stdout + completed.stderr)
        raise SystemExit(f"run with {users} users failed with exit code {completed.returncode}")
    for line in completed.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    raise SystemExit(f"run with {users} users printed no result")


def parent(small: int, large: int) -> None:
    results = [run_child(small, review_tick=True), run_child(large)]
    for r in results:
        p = f"N={r['users']}"
        print(f"[{p}] replies: {r['replies']}")
        print(f"[{p}] turns/s: {r['turns_per_second']:.0f}")
        print(f"[{p}] peak resident sessions: {r['peak_sessions']}")
        print(f"[{p}] resident sessions after trim: {r['resident_sessions']}")
        print(f"[{p}] janitor trim wait s: {r['trim_seconds']:.2f}")
        print(f"[{p}] RSS before the turns MB: {r['rss_start_kb'] / 1024:.1f}")
        print(f"[{p}] RSS after trim + gc MB: {r['rss_kb'] / 1024:.1f}")
        print(f"[{p}] RSS peak (VmHWM) MB: {r['hwm_kb'] / 1024:.1f}")
        print(f"[{p}] Python allocated blocks: {r['allocated_blocks']}")
        print(f"[{p}] gc-tracked objects: {r['gc_objects']}")
    a, b = results
    if "reviews_started" in a:
        p = f"N={a['users']}"
        print(f"[{p}] one review tick afterwards: reviews started at once: {a['reviews_started']}")
        print(
            f"[{p}] one review tick afterwards: peak LLM requests in flight: {a['peak_llm_in_flight']}"
        )
        print(f"[{p}] one review tick afterwards: seconds to finish: {a['review_seconds']:.1f}")
    difference_mb = (b["rss_kb"] - a["rss_kb"]) / 1024
    growth_mb = (b["rss_kb"] - b["rss_start_kb"] - (a["rss_kb"] - a["rss_start_kb"])) / 1024
    print(f"RSS difference N={b['users']} - N={a['users']} MB: {difference_mb:.1f}")
    print(f"RSS growth during the turns, difference MB: {growth_mb:.1f}")
    print(f"allocated blocks difference: {b['allocated_blocks'] - a['allocated_blocks']}")
    print(f"gc-tracked objects difference: {b['gc_objects'] - a['gc_objects']}")
    met = abs(difference_mb) <= TARGET_MB
    print(verdict(f"RSS difference {difference_mb:.1f} MB within {TARGET_MB:.0f} MB", met))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 100 and N = 500")
    parser.add_argument("--users", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--review-tick", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.users:
        child(args.users, args.review_tick)
    elif args.quick:
        parent(100, 500)
    else:
        parent(1000, 10_000)


if __name__ == "__main__":
    main()
