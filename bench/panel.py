"""Web panel API latency over real HTTP (uvicorn on the bot's loop) while addressed messages
keep arriving: `GET …/memories` of 200 memories and the overview of 1 000 chats, beside a
constant route."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import httpx
from nonebot.message import handle_event
from pydantic import SecretStr

from bench import generated_chat as gen
from bench import harness as h
from tests.panel.browser import serving

if TYPE_CHECKING:
    from fastapi import FastAPI

TOKEN = "bench-panel-token-0123456789"
OVERVIEW_URL = "/aimemory/api/chats"
MEMORY_GROUP = 1
MEMORIES = 200
CHATS = 1000
PAIRS_PER_WINDOW = 10
LOG_ROWS_PER_CHAT = 20
# Groups the concurrent turns are sent in (not among the 1 000, so their windows grow apart).
BUSY_GROUPS = range(900_001, 900_009)
TURNS_PER_SECOND = 20  # a busy bot: every addressed message a full turn


def panel_app(runtime: h.Runtime) -> tuple[FastAPI, Any]:
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


async def fill(runtime: h.Runtime, rng: random.Random, chats: int) -> None:
    """`chats` groups with a stored window and chat-log rows, and one with 200 memories."""
    service, saved = h.memory_service(runtime), 0
    while saved < MEMORIES:
        content = f"第{saved}条：{gen.chat_line(rng, 20, 80)}"
        saved += (await service.save(h.group_key(MEMORY_GROUP), content)).status == "saved"
    writer, now = h.chat_log_writer(runtime), datetime.now(timezone.utc)
    for group in range(1, chats + 1):
        key = h.group_key(group)
        pairs = [(gen.chat_line(rng), gen.chat_line(rng)) for _ in range(PAIRS_PER_WINDOW)]
        await h.prefill_history(runtime, key, pairs)
        for i in range(LOG_ROWS_PER_CHAT):
            at = now - timedelta(minutes=LOG_ROWS_PER_CHAT - i)
            writer.add(h.chat_row(key, at, "user", gen.chat_line(rng), ("2001", "小明")))
        if group % 100 == 0:
            await writer.flush()
    await writer.flush()


async def keep_the_bot_busy(stop: asyncio.Event, rng: random.Random) -> int:
    """Addressed messages in the busy groups at TURNS_PER_SECOND until `stop`; replies sent."""
    bot, sent = h.CountingBot(), 0
    turns: set[asyncio.Task[None]] = set()
    while not stop.is_set():
        event = gen.addressed(gen.chat_line(rng, 10, 60), BUSY_GROUPS[sent % len(BUSY_GROUPS)], rng)
        turn = asyncio.get_running_loop().create_task(handle_event(bot, event))
        turns.add(turn)
        turn.add_done_callback(turns.discard)
        sent += 1
        await asyncio.sleep(1 / TURNS_PER_SECOND)
    await asyncio.gather(*turns)
    return bot.sent_count


def sample(client: httpx.Client, url: str, count: int) -> list[int]:
    """Latencies (ns) of `count` GETs of `url`, each checked (run in a thread: the browser)."""
    samples = []
    for _ in range(count):
        started = time.perf_counter_ns()
        response = client.get(url)
        samples.append(time.perf_counter_ns() - started)
        response.raise_for_status()
    return samples


async def run(bench: h.Bench) -> None:
    """Fill the chats, time the panel's GETs while the bot is busy, print the verdict."""
    rng = random.Random(15)
    chats, requests = (100, 50) if bench.quick else (CHATS, 400)
    memories_url = f"/aimemory/api/chats/{h.group_key(MEMORY_GROUP)}/memories"
    urls = {"baseline": "/baseline", "memories": memories_url, "overview": OVERVIEW_URL}
    async with h.plugin(bench.work_dir / "panel.db", "好的，收到。") as (_, runtime):
        print(f"filling {chats} chats, {MEMORIES} memories…", flush=True)
        await fill(runtime, rng, chats)
        app, data = panel_app(runtime)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with serving(app) as root:
            with httpx.Client(base_url=root, headers=headers, timeout=30) as client:
                listed = (await asyncio.to_thread(client.get, memories_url)).json()
                overview = (await asyncio.to_thread(client.get, OVERVIEW_URL)).json()
                assert len(listed) == MEMORIES, len(listed)
                assert len(overview) >= chats, len(overview)
                stop = asyncio.Event()
                busy = asyncio.get_running_loop().create_task(keep_the_bot_busy(stop, rng))
                await asyncio.sleep(0.5)  # the turns are under way
                samples = {
                    name: await asyncio.to_thread(sample, client, url, requests)
                    for name, url in {**urls, "baseline after": "/baseline"}.items()
                }
                stop.set()
                handled = await busy
        await data.close()
    print(f"{chats} chats, {MEMORIES} memories; {handled} turns handled meanwhile")
    baseline = samples["baseline"] + samples["baseline after"]
    print(h.latency("baseline GET (constant route)", baseline))
    print(h.latency(f"GET …/memories ({MEMORIES} memories)", samples["memories"]))
    print(h.latency(f"GET …/api/chats ({chats} chats)", samples["overview"]))
    memories_p99 = h.ms(h.percentile(samples["memories"], 0.99))
    overview_p99 = h.ms(h.percentile(samples["overview"], 0.99))
    label = f"memories p99 {memories_p99:.1f} ms <= 20 ms, overview p99 {overview_p99:.1f} ms"
    h.verdict(f"{label} <= 100 ms", memories_p99 <= 20 and overview_p99 <= 100, quick=bench.quick)


if __name__ == "__main__":
    h.main(__doc__, run)
