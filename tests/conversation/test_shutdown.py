"""Shutdown is bounded and loses nothing: model calls in flight are stopped after a short
grace period, the messages of the turn in flight and of queued turns are kept."""

from __future__ import annotations

import asyncio
import json
import time

from tests.conversation.test_bursts import logged_texts, wait_until
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import delay, text
from tests.memory.test_extraction import ExtractingLLM, facts_of_topics, talk_until_compressed

SHUTDOWN_BOUND_SECONDS = 10.0


async def stored_user_texts(plugin, key: str) -> list[str]:
    rows = await plugin.runtime.database.read(
        "SELECT body FROM messages WHERE session_key = ? ORDER BY seq", (key,)
    )
    bodies = [json.loads(body) for (body,) in rows]
    return [b["content"] for b in bodies if b["role"] == "user"]


async def test_shutdown_with_a_hanging_model_call_keeps_every_message(plugin) -> None:
    await plugin.restart(aimemory_request_timeout=60)
    plugin.llm.script(delay(60, text("太慢了")))
    bot = RecordingBot()
    in_flight = asyncio.create_task(bot.receive(group_message("第一句", user_id=5, to_me=True)))
    await wait_until(lambda: plugin.llm.pending == 0)
    queued = [
        asyncio.create_task(
            bot.receive_all(
                group_message("第二句", user_id=5, to_me=True),
                group_message("我排在后面", user_id=6, to_me=True),
            )
        )
    ]
    # Both queued (one open burst each) before the shutdown begins.
    await wait_until(lambda: len(plugin.runtime.conversation.bursts) == 2)

    started = time.monotonic()
    await plugin.stop()
    assert time.monotonic() - started < SHUTDOWN_BOUND_SECONDS
    await asyncio.wait_for(asyncio.gather(in_flight, *queued), 2)
    assert bot.sent_texts == []

    await plugin.start()
    users = await stored_user_texts(plugin, "g:111")
    assert [u.rsplit("：", 1)[-1] for u in users] == ["第一句", "第二句", "我排在后面"]
    assert await logged_texts(plugin, "g:111") == ["第一句", "第二句", "我排在后面"]

    # The next ordinary message is answered, with what was kept before it.
    plugin.llm.script(text("我回来了"))
    await bot.receive(group_message("还在吗", user_id=5, to_me=True))
    assert bot.sent_texts == ["我回来了"]
    request = json.dumps(plugin.llm.last_messages(), ensure_ascii=False)
    assert all(said in request for said in ("第一句", "第二句", "我排在后面", "还在吗"))


async def test_shutdown_does_not_wait_for_a_hanging_extraction(plugin) -> None:
    llm = ExtractingLLM(facts_of_topics, extract_delay_seconds=60)
    plugin.llm.responder = llm
    await plugin.restart(
        aimemory_max_context_tokens=1024, aimemory_tokenizer="cl100k", aimemory_request_timeout=60
    )
    await talk_until_compressed(plugin, 1301)
    await wait_until(lambda: bool(llm.transcripts))  # the extraction call is in flight

    started = time.monotonic()
    await plugin.stop()
    assert time.monotonic() - started < SHUTDOWN_BOUND_SECONDS
