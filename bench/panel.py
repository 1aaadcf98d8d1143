"""Web panel API latency over real HTTP (uvicorn on the bot's event loop) while addressed
group messages keep arriving: `GET …/api/chats/{scope}/memories` of a chat with 200 memories,
and the overview `GET …/api/chats` of 1 000 chats (20 window messages, 20 chat-log rows
each). Baseline: a route answering a constant list, measured alike in the same run.

Targets: p99 <= 20 ms for the 200 memories, <= 100 ms for the overview of 1 000 chats.
Run: python -m bench.panel [--quick]
"""

from __future__ import annotations

import asyncio
import random
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import httpx
from nonebot.message import handle_event
from pydantic import SecretStr

from bench.harness import (
    Bench,
    CountingBot,
    addressed,
    chat_line,
    chat_log_writer,
    chat_row,
    fake_llm,
    group_key,
    latency,
    main,
    memory_service,
    ms,
    percentile,
    plugin_runtime,
    prefill_history,
    verdict,
)
from tests.fakes.openai_server import text
from tests.panel.browser import serving

if TYPE_CHECKING:
    from fastapi import FastAPI

    from bench.harness import Runtime

TOKEN = "bench-panel-token-0123456789"
MEMORY_GROUP = 1
MEMORIES = 200
CHATS = 1000
PAIRS_PER_WINDOW = 10
LOG_ROWS_PER_CHAT = 20
# Groups the concurrent turns are sent in (not among the 1 000, so their windows grow apart).
BUSY_GROUPS = range(900_001, 900_009)
# A busy bot: twenty addressed messages a second, every one a full turn.
TURNS_PER_SECOND = 20


def panel_app(runtime: Runtime) -> tuple[FastAPI, Any]:
    """The panel's router on a fresh FastAPI app, beside a constant baseline route."""
    from fastapi import FastAPI

    from nonebot_plugin_aimemory.panel import panel_router
    from nonebot_plugin_aimemory.panel.views import NoNames
    from nonebot_plugin_aimemory.runtime import current_runtime

    config = runtime.config.model_copy(update={"aimemory_panel_token": SecretStr(TOKEN)})
    router, data = panel_router(config, NoNames(), current_runtime)
    app = FastAPI()
    app.include_router(router)

    async def baseline() -> list[int]:
        return []

    app.add_api_route("/baseline", baseline, methods=["GET"])
    return app, data


async def fill(runtime: Runtime, rng: random.Random, chats: int) -> None:
    """`chats` groups with a stored window and chat-log rows, and one with 200 memories."""
    service = memory_service(runtime)
    saved = 0
    while saved < MEMORIES:
        outcome = await service.save(
            group_key(MEMORY_GROUP), f"第{saved}条：{chat_line(rng, 20, 80)}"
        )
        saved += outcome.status == "saved"
    writer = chat_log_writer(runtime)
    now = datetime.now(timezone.utc)
    for group in range(1, chats + 1):
        key = group_key(group)
        pairs = [(chat_line(rng), chat_line(rng)) for _ in range(PAIRS_PER_WINDOW)]
        await prefill_history(runtime, key, pairs)
        for i in range(LOG_ROWS_PER_CHAT):
            at = now - timedelta(minutes=LOG_ROWS_PER_CHAT - i)
            writer.add(chat_row(key, at, "user", chat_line(rng), ("2001", "小明")))
        if group % 100 == 0:
            await writer.flush()
    await writer.flush()


async def keep_the_bot_busy(runtime: Runtime, stop: asyncio.Event, rng: random.Random) -> int:
    """Addressed messages in the busy groups at TURNS_PER_SECOND, until `stop`; how many
    were handled."""
    bot = CountingBot()
    turns: set[asyncio.Task[None]] = set()
    sent = 0
    while not stop.is_set():
        group = BUSY_GROUPS[sent % len(BUSY_GROUPS)]
        turn = asyncio.get_running_loop().create_task(
            handle_event(bot, addressed(chat_line(rng, 10, 60), group, rng))
        )
        turns.add(turn)
        turn.add_done_callback(turns.discard)
        sent += 1
        await asyncio.sleep(1 / TURNS_PER_SECOND)
    await asyncio.gather(*turns)
    return bot.sent_count


def sample(client: httpx.Client, url: str, count: int) -> list[int]:
    """Latencies (ns) of `count` sequential GETs of `url`, each checked to succeed. Run in
    a thread: the client is the browser, not part of the bot's event loop."""
    samples = []
    for _ in range(count):
        started = time.perf_counter_ns()
        response = client.get(url)
        samples.append(time.perf_counter_ns() - started)
        response.raise_for_status()
    return samples


async def run(bench: Bench) -> None:
    rng = random.Random(15)
    chats = 100 if bench.quick else CHATS
    requests = 50 if bench.quick else 400
    with fake_llm(lambda body: text("好的，收到。")) as llm:
        async with plugin_runtime(llm, bench.work_dir / "panel.db") as runtime:
            print(f"filling {chats} chats, {MEMORIES} memories…", flush=True)
            await fill(runtime, rng, chats)
            app, data = panel_app(runtime)
            async with serving(app) as root:
                headers = {"Authorization": f"Bearer {TOKEN}"}
                with httpx.Client(base_url=root, headers=headers, timeout=30) as client:
                    memories_url = f"/aimemory/api/chats/{group_key(MEMORY_GROUP)}/memories"
                    overview_url = "/aimemory/api/chats"
                    listed = (await asyncio.to_thread(client.get, memories_url)).json()
                    overview = (await asyncio.to_thread(client.get, overview_url)).json()
                    assert len(listed) == MEMORIES, len(listed)
                    assert len(overview) >= chats, len(overview)
                    stop = asyncio.Event()
                    busy = asyncio.get_running_loop().create_task(
                        keep_the_bot_busy(runtime, stop, rng)
                    )
                    await asyncio.sleep(0.5)  # the turns are under way
                    baseline = await asyncio.to_thread(sample, client, "/baseline", requests)
                    memories = await asyncio.to_thread(sample, client, memories_url, requests)
                    overviews = await asyncio.to_thread(sample, client, overview_url, requests)
                    baseline_after = await asyncio.to_thread(sample, client, "/baseline", requests)
                    stop.set()
                    handled = await busy
            await data.close()
    print(f"{chats} chats, {MEMORIES} memories; {handled} turns handled meanwhile")
    print(latency("baseline GET (constant route)", baseline + baseline_after))
    print(latency(f"GET …/memories ({MEMORIES} memories)", memories))
    print(latency(f"GET …/api/chats ({chats} chats)", overviews))
    memories_p99 = ms(percentile(memories, 0.99))
    overview_p99 = ms(percentile(overviews, 0.99))
    verdict(
        f"memories p99 {memories_p99:.1f} ms <= 20 ms, overview p99 {overview_p99:.1f} ms "
        "<= 100 ms",
        memories_p99 <= 20 and overview_p99 <= 100,
        quick=bench.quick,
    )


if __name__ == "__main__":
    main(__doc__, run)
