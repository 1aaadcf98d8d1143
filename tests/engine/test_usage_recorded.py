"""Token usage of a running bot, as SQLite holds it: every model role's calls land under
the chat they were made for and today's date in AIMEMORY_TIMEZONE, written in batches, and
a restart keeps every figure (the last ones are written at shutdown)."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from tests.chatlog.helpers import FakeReviewer, ops
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.openai_server import reported_usage, text, tool_calls
from tests.fakes.qq import QQBot, content, qq_image, restart_with_vision
from tests.fakes.responders import FactKeepingLLM, is_compression_request
from tests.memory.helpers import wait_for

Row = tuple[str, str, str, int, int, int, int]


def usage_rows(db_path: str, chat_key: str | None = None) -> list[Row]:
    """(chat, day, role, prompt, completion, cached, calls) rows, read straight from the
    file (also after the runtime closed it)."""
    connection = sqlite3.connect(db_path)
    try:
        sql = (
            "SELECT chat_key, day, role, prompt_tokens, completion_tokens, cached_tokens, calls "
            "FROM token_usage"
        )
        if chat_key is None:
            return connection.execute(sql + " ORDER BY chat_key, day, role").fetchall()
        return connection.execute(sql + " WHERE chat_key = ? ORDER BY role", (chat_key,)).fetchall()
    finally:
        connection.close()


def by_role(rows: list[Row]) -> dict[str, Row]:
    return {row[2]: row for row in rows}


def china_today() -> str:
    return datetime.now(ZoneInfo("Asia/Shanghai")).date().isoformat()


async def test_a_turns_usage_is_stored_under_the_chat_today_and_the_main_role(plugin) -> None:
    plugin.llm.script(text("好的", usage=reported_usage(1200, 40, cached=1000)))

    await RecordingBot().receive(group_message("你好", to_me=True, group_id=801))
    await plugin.runtime.usage.flush()

    assert usage_rows(plugin.db_path) == [("g:801", china_today(), "main", 1200, 40, 1000, 1)]


async def test_deepseeks_cache_hits_are_stored_as_cached_tokens(plugin) -> None:
    plugin.llm.script(text("好的", usage=reported_usage(900, 30, cached=640, style="deepseek")))

    await RecordingBot().receive(private_message("你好", user_id=3801))
    await plugin.runtime.usage.flush()

    assert usage_rows(plugin.db_path) == [("f:3801", china_today(), "main", 900, 30, 640, 1)]


async def test_tool_rounds_of_one_turn_are_all_counted(plugin) -> None:
    plugin.llm.script(
        tool_calls(("read_recent_chat", {}), usage=reported_usage(500, 20)),
        text("刚才大家在聊周末去哪玩。", usage=reported_usage(700, 10, cached=500)),
    )

    await RecordingBot().receive(group_message("刚才说了什么", to_me=True, group_id=802))
    await plugin.runtime.usage.flush()

    assert usage_rows(plugin.db_path, "g:802") == [
        ("g:802", china_today(), "main", 1200, 30, 500, 2)
    ]


async def test_compression_and_extraction_are_counted_under_their_roles(plugin) -> None:
    responder = FactKeepingLLM()
    plugin.llm.responder = responder
    runtime = await plugin.restart(aimemory_max_context_tokens=2000)
    bot = RecordingBot()
    line = "周末去爬山还是去看电影？大家投票决定一下吧，我觉得爬山更好一些。"
    for i in range(60):
        await bot.receive(group_message(f"#fact{i}:话题{i} {line}", to_me=True, group_id=803))
        if runtime.sessions.get("g:803").bot.stats.count:
            break

    async def extracted() -> bool:
        await runtime.usage.flush()
        return "extractor" in by_role(usage_rows(plugin.db_path, "g:803"))

    assert await wait_for(extracted, 5.0)
    roles = by_role(usage_rows(plugin.db_path, "g:803"))
    # FactKeepingLLM reports 100 prompt and 20 completion tokens per summary.
    compressions = responder.compression_calls
    assert roles["compressor"][3:] == (100 * compressions, 20 * compressions, 0, compressions)
    # (an extraction in flight when a member's call starts is stopped and sent again on
    # this local server, so main calls are counted by their prompt, not by the responder)
    from nonebot_plugin_aimemory import prompts

    main_calls = sum(
        1
        for body in plugin.llm.chat_requests
        if not is_compression_request(body)
        and body["messages"][0]["content"]
        not in (prompts.EXTRACT_PROMPT, prompts.EXTRACT_SPEAKER_PROMPT)
    )
    assert roles["main"][6] == main_calls
    assert set(roles) == {"main", "compressor", "extractor"}


async def test_memory_embeddings_are_counted_for_the_chat_that_saved(plugin) -> None:
    await plugin.restart(
        aimemory_embedding_model="fake-embed", aimemory_embedding_api_base=plugin.llm.base_url
    )
    plugin.llm.script(
        tool_calls(("memory_save", {"content": "小明喜欢周末去爬山"})), text("记住了")
    )

    await RecordingBot().receive(group_message("记一下", to_me=True, group_id=804))
    await plugin.runtime.usage.flush()

    embeddings = by_role(usage_rows(plugin.db_path, "g:804"))["embeddings"]
    sent = plugin.llm.embedding_requests
    # Each input costs len // 3 + 1 tokens at the fake server: the saved memory's, and the
    # query of the memories put before the message.
    expected = sum(len(item) // 3 + 1 for body in sent for item in body["input"])
    assert embeddings[3:] == (expected, 0, 0, len(sent))


async def test_a_review_is_counted_for_its_chat_under_reviewer(plugin) -> None:
    reviewer = FakeReviewer()
    plugin.llm.responder = reviewer
    bot = RecordingBot()
    await bot.receive(group_message("我家的猫叫咪咪", to_me=True, group_id=805))
    await plugin.runtime.chat_log.flush()
    reviewer.answer(ops({"op": "noop"}))

    await plugin.runtime.chat_log.reviews.run_now("g:805")
    await plugin.runtime.usage.flush()

    assert set(by_role(usage_rows(plugin.db_path, "g:805"))) == {"main", "reviewer"}
    assert by_role(usage_rows(plugin.db_path, "g:805"))["reviewer"][6] == 1


async def test_an_image_description_is_counted_for_the_chat_under_vision(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", png_bytes())

    await qq.receive(private_message(content("这是什么", qq_image(url)), user_id=3805))
    await plugin.runtime.usage.flush()

    assert set(by_role(usage_rows(plugin.db_path, "f:3805"))) == {"main", "vision"}


async def test_many_turns_are_written_in_a_few_transactions(plugin) -> None:
    runtime = plugin.runtime
    writes: list[int] = []
    add = runtime.usage.ledger.add

    async def counted_add(rows: Any) -> None:
        writes.append(len(rows))
        await add(rows)

    runtime.usage.ledger.add = counted_add  # type: ignore[method-assign]
    bot = RecordingBot()

    for i in range(20):
        await bot.receive(group_message(f"第{i}句", to_me=True, group_id=806 + i % 2))
    await runtime.usage.flush()

    # The periodic flush (every 5 s) may have run once meanwhile; no write per call.
    assert 1 <= len(writes) <= 2
    rows = usage_rows(plugin.db_path)
    assert [(chat, role, calls) for chat, _, role, *_, calls in rows] == [
        ("g:806", "main", 10),
        ("g:807", "main", 10),
    ]


async def test_a_restart_keeps_the_figures_written_at_shutdown(plugin) -> None:
    bot = RecordingBot()
    plugin.llm.script(
        text("好的", usage=reported_usage(100, 10)),
        text("好的", usage=reported_usage(200, 20, cached=150)),
    )
    await bot.receive(group_message("你好", to_me=True, group_id=808))
    await bot.receive(group_message("再说一句", to_me=True, group_id=808))

    await plugin.stop()  # nothing was flushed before: shutdown writes it all

    assert usage_rows(plugin.db_path) == [("g:808", china_today(), "main", 300, 30, 150, 2)]
    runtime = await plugin.start()
    assert runtime.usage.today_total("g:808") == 330
    plugin.llm.script(text("好的", usage=reported_usage(50, 5)))
    await bot.receive(group_message("又来了", to_me=True, group_id=808))
    await runtime.usage.flush()
    assert usage_rows(plugin.db_path) == [("g:808", china_today(), "main", 350, 35, 150, 3)]


async def test_rows_flushed_by_a_turn_are_embedded_for_no_chat(plugin) -> None:
    """The chat log's flush embeds every chat's rows in one request: those tokens are
    nobody's, even when a turn's row started the flush."""
    from nonebot_plugin_aimemory.chatlog import writer
    from nonebot_plugin_aimemory.engine.usage import NO_CHAT

    runtime = await plugin.restart(
        aimemory_embedding_model="fake-embed",
        aimemory_embedding_api_base=plugin.llm.base_url,
        aimemory_chat_log_embeddings=True,
        aimemory_memory_auto_inject=False,
        aimemory_chat_log_flush_seconds=60,
    )
    bot = RecordingBot()
    # Rows of other chats wait in the buffer; the turn's rows fill it, starting a flush.
    for i in range(writer.FLUSH_BATCH_ROWS - 1):
        runtime.chat_log.writer.add(_row("g:810", f"闲聊{i}"))
    await bot.receive(group_message("你好", to_me=True, group_id=809))

    async def embedded() -> bool:
        await runtime.usage.flush()
        return any(r[2] == "embeddings" for r in usage_rows(plugin.db_path))

    assert await wait_for(embedded, 5.0)
    embedding_chats = {r[0] for r in usage_rows(plugin.db_path) if r[2] == "embeddings"}
    assert embedding_chats == {NO_CHAT}


def _row(chat_key: str, said: str):
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    return ChatRow(chat_key, utc_now_text(), "user", said, speaker_id="2001", speaker_name="小明")
