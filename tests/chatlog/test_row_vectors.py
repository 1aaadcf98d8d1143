"""Optional vectors of chat-log rows (aimemory_chat_log_embeddings): rows embedded in the
background in batches, found by meaning as well as by their words, only ever within their
own session; keyword search while the embedding server is down, and the rows it missed
embedded once it is back; vectors removed with their rows and kept across restarts; and
nothing embedded at all unless the key is on."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from tests.chatlog.helpers import GROUP, GROUP_ID, model_calls
from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import cosine, embed_text
from tests.quoted_blocks import chat_rows

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow

OTHER_GROUP_ID = 222
OTHER_GROUP = f"g:{OTHER_GROUP_ID}"
BASKETBALL = "Bob plays basketball every weekend"
# Shares no search term with BASKETBALL ("basketballer" is not "basketball", a Saturday is
# not a weekend), only character bigrams, which is what the fake embedding model measures.
PARAPHRASE = "basketballer saturdays"
OTHERS = ["周末我们去海底捞吃火锅吧", "明天下午三点在会议室开会", "remember to buy some milk"]
# Closer to STRONG_QUERY than STRONG_MATCH by the fake model's vectors, but sharing none
# of its words ("zhangsanfeng" is another name, "umbrellaish" another word).
STRONG_QUERY = "zhangsan umbrella"
STRONG_MATCH = "zhangsan took my umbrella yesterday after the long meeting"
DECOYS = [
    "zhangsanfeng umbrellaish",
    "the umbrellaish zhangsanfeng",
    "umbrellaishly zhangsanfeng",
    "zhangsanfengs umbrellaish things",
]


async def with_row_vectors(plugin, **overrides):
    """Embeddings configured, chat-log rows included."""
    settings = {
        "aimemory_embedding_model": "fake-embed",
        "aimemory_embedding_api_base": plugin.llm.base_url,
        "aimemory_chat_log_embeddings": True,
    }
    return await plugin.restart(**{**settings, **overrides})


def row_vectors(plugin) -> ChatLogVectors:
    from nonebot_plugin_aimemory.chatlog.vectors import ChatLogVectors

    vectors = plugin.runtime.chat_log.writer.vectors
    assert isinstance(vectors, ChatLogVectors)
    return vectors


def row_of(line: str, key: str = GROUP, at: datetime | None = None) -> ChatRow:
    """A row 小明 said, now or `at`."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text, utc_text

    return ChatRow(key, utc_text(at) if at else utc_now_text(), "user", line, "2001", "小明")


def as_embedded(line: str) -> str:
    """What is embedded of a row 小明 said: his name, then the line."""
    return f"小明: {line}"


async def write(plugin, *lines: str, key: str = GROUP, at: datetime | None = None) -> None:
    """Rows said by 小明 go through the chat log's writer; waits for their vectors."""
    writer = plugin.runtime.chat_log.writer
    for line in lines:
        writer.add(row_of(line, key, at))
    await writer.flush()
    await writer.vectors.settle()


async def vector_count(plugin, key: str = GROUP) -> int:
    """How many of the session's rows have a vector of the configured model."""
    return await plugin.runtime.chat_log.writer.store.vectors.count(key, row_vectors(plugin).maker)


async def search(plugin, keyword: str, *, group_id: int = GROUP_ID) -> list[str]:
    """The texts of the lines search_current_chat shows the model, in order."""
    result = await model_calls(
        plugin, RecordingBot(), "search_current_chat", {"keyword": keyword}, group_id=group_id
    )
    if result.startswith("没有找到"):
        return []
    return [line.partition("：")[2] for line in chat_rows(result)]


def embedded_texts(plugin) -> list[str]:
    """Every text sent to the embedding model so far."""
    return [text for body in plugin.llm.embedding_requests for text in body["input"]]


# ---------------------------------------------------------------- found by meaning


async def test_a_paraphrase_sharing_no_word_with_a_row_finds_it_through_its_vector(
    plugin,
) -> None:
    await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, *OTHERS)

    found = await search(plugin, PARAPHRASE)

    assert found[0] == BASKETBALL


async def test_without_row_vectors_the_paraphrase_is_not_found(plugin) -> None:
    await write(plugin, BASKETBALL, *OTHERS)

    assert await search(plugin, PARAPHRASE) == []


async def test_a_strong_keyword_match_is_not_pushed_out_by_closer_vectors(plugin) -> None:
    await with_row_vectors(plugin)
    await write(plugin, STRONG_MATCH, *DECOYS, *OTHERS)
    query = embed_text(STRONG_QUERY)
    assert all(
        cosine(query, embed_text(decoy)) > cosine(query, embed_text(STRONG_MATCH))
        for decoy in DECOYS
    )

    found = await search(plugin, STRONG_QUERY)

    assert found[0] == STRONG_MATCH


async def test_a_query_of_only_stopwords_finds_nothing_with_vectors_either(plugin) -> None:
    await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, *OTHERS)

    assert await search(plugin, "what is the") == []


# ---------------------------------------------------------------- sessions


async def test_another_sessions_rows_are_never_returned_however_close_their_vectors(
    plugin,
) -> None:
    await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, PARAPHRASE, key=OTHER_GROUP)
    await write(plugin, *OTHERS)

    found = await search(plugin, PARAPHRASE)
    found_there = await search(plugin, PARAPHRASE, group_id=OTHER_GROUP_ID)

    assert BASKETBALL not in found
    assert PARAPHRASE not in found
    assert set(found) <= {*OTHERS, "帮我查一下", "好的"}
    assert found_there[:2] == [PARAPHRASE, BASKETBALL]


# ---------------------------------------------------------------- periods and old rows


async def test_rows_of_a_named_period_are_ranked_first_then_every_other_row(plugin) -> None:
    from nonebot_plugin_aimemory.chatlog.tools import named_periods

    await with_row_vectors(plugin)
    now = datetime.now(timezone.utc)
    milk = OTHERS[2]
    await write(plugin, milk, at=now - timedelta(days=1))
    await write(plugin, OTHERS[0], OTHERS[1], BASKETBALL, at=now)
    store, vectors = plugin.runtime.chat_log.writer.store, row_vectors(plugin)
    ids = {row.text: row.id for row in await store.recent(GROUP, 10)}
    periods = await named_periods(store, GROUP, "昨天", plugin.runtime.config.zone, now)
    keyword = await store.index.ranking(GROUP, f"昨天 {PARAPHRASE}", 50, periods)
    query = await vectors.query_vector(PARAPHRASE)
    assert query is not None
    assert cosine(query, embed_text(BASKETBALL)) > cosine(query, embed_text(milk))

    with_period = await vectors.ranking(GROUP, query, keyword.periods)
    without = await vectors.ranking(GROUP, query, [])

    # Yesterday's row first, though today's newest is closer; without the period, the
    # closest first, and every row of the chat.
    assert [row_id for row_id, _ in with_period][:2] == [ids[milk], ids[BASKETBALL]]
    assert without[0][0] == ids[BASKETBALL]
    assert sorted(row_id for row_id, _ in without) == sorted(ids.values())


async def test_the_oldest_row_of_a_long_chat_is_found_by_meaning(plugin) -> None:
    await with_row_vectors(plugin)
    fillers = [f"周末我们去海底捞吃火锅第{i}次" for i in range(30)]
    await write(plugin, BASKETBALL, *fillers)

    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL


async def test_a_row_embedded_below_the_newest_after_a_search_is_found_by_the_next(
    plugin,
) -> None:
    runtime = await with_row_vectors(plugin)
    embedder = runtime.memory.service.embedder
    embedder.pause_initial_seconds = embedder.pause_max_seconds = 0.05
    plugin.llm.embeddings_fail = True
    await write(plugin, BASKETBALL)  # left without a vector for now
    plugin.llm.embeddings_fail = False
    await asyncio.sleep(embedder.pause_max_seconds)
    await write(plugin, *OTHERS)
    await search(plugin, "milk")  # the session's vectors are read: no basketball yet

    await row_vectors(plugin).backfill()  # an older row gets its vector

    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL


async def test_a_row_refused_after_a_search_is_never_shown_again(plugin) -> None:
    await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, *OTHERS)
    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL  # vectors read

    writer = plugin.runtime.chat_log.writer
    (basketball,) = [r for r in await writer.store.recent(GROUP, 10) if r.text == BASKETBALL]
    await writer.store.mark_refused([basketball])

    assert BASKETBALL not in await search(plugin, PARAPHRASE)
    assert BASKETBALL not in await search(plugin, PARAPHRASE)  # (and forgotten)


# ---------------------------------------------------------------- writing and backfilling


async def test_rows_flushed_together_are_embedded_in_one_request(plugin) -> None:
    await with_row_vectors(plugin)
    lines = [f"第{i}号成员最喜欢的数字是{i * 7 + 3}" for i in range(40)]
    before = len(plugin.llm.embedding_requests)

    await write(plugin, *lines)

    requests = plugin.llm.embedding_requests[before:]
    assert [sorted(body["input"]) for body in requests] == [sorted(map(as_embedded, lines))]
    assert await vector_count(plugin) == 40


async def test_a_group_members_row_is_embedded_after_their_name_the_bots_without_one(
    plugin,
) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_now_text

    await with_row_vectors(plugin)
    writer = plugin.runtime.chat_log.writer
    writer.add(ChatRow(GROUP, utc_now_text(), "assistant", "我记住了", "10000", "小助手"))
    writer.add(ChatRow(GROUP, utc_now_text(), "user", "我也是", "2002", None))
    writer.add(ChatRow("f:2001", utc_now_text(), "user", "私聊的话", "2001", "小明"))
    await write(plugin, BASKETBALL)

    # A private chat's lines are all one person's: no name there.
    expected = ["我记住了", "我也是", "私聊的话", as_embedded(BASKETBALL)]
    assert sorted(embedded_texts(plugin)) == sorted(expected)
    assert row_vectors(plugin).maker.convention.endswith("; rows speaker: text")


async def test_vectors_of_rows_embedded_as_text_alone_are_made_again_after_the_name(
    plugin,
) -> None:
    await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, *OTHERS)
    maker = row_vectors(plugin).maker
    earlier = maker.convention.removesuffix("; rows speaker: text")
    database = plugin.runtime.chat_log.writer.store.vectors.database
    # As an earlier release stored them: the texts alone, and a convention saying only so.
    await database.write(
        lambda connection: connection.execute(
            "UPDATE chat_log_vectors SET convention = ?", (earlier,)
        )
    )
    before = len(plugin.llm.embedding_requests)

    await with_row_vectors(plugin)
    await row_vectors(plugin).settle()

    assert await vector_count(plugin) == len(OTHERS) + 1
    again = [text for body in plugin.llm.embedding_requests[before:] for text in body["input"]]
    assert sorted(again) == sorted(map(as_embedded, [BASKETBALL, *OTHERS]))
    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL


async def test_refused_and_empty_rows_are_never_embedded(plugin) -> None:
    await with_row_vectors(plugin)
    writer = plugin.runtime.chat_log.writer
    refused = row_of("被拦下的话")
    writer.add(refused)
    writer.mark_refused(refused)
    writer.add(row_of("   "))
    await write(plugin, BASKETBALL)
    await row_vectors(plugin).backfill()

    embedded = embedded_texts(plugin)
    assert not any("被拦下的话" in text for text in embedded)
    assert all(text.removeprefix(as_embedded("")).strip() for text in embedded)
    assert await vector_count(plugin) == 1


async def test_while_the_server_is_down_search_is_by_keyword_and_rows_are_embedded_later(
    plugin,
) -> None:
    runtime = await with_row_vectors(plugin)
    embedder = runtime.memory.service.embedder
    # Short pauses that do not grow: however slow the machine, the failures end in 0.05 s.
    embedder.pause_initial_seconds = embedder.pause_max_seconds = 0.05
    plugin.llm.embeddings_fail = True
    await write(plugin, BASKETBALL, *OTHERS)
    assert await vector_count(plugin) == 0

    assert (await search(plugin, "basketball"))[0] == BASKETBALL

    plugin.llm.embeddings_fail = False
    await asyncio.sleep(embedder.pause_max_seconds)  # the last pause is over
    await search(plugin, "milk")  # the first embedding call that works again
    await plugin.runtime.chat_log.flush()
    await row_vectors(plugin).settle()

    logged = await plugin.runtime.chat_log.writer.store.recent(GROUP, 100)
    assert await vector_count(plugin) == len(logged)  # the turns' own rows too
    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL


async def test_rows_logged_before_the_key_was_on_are_backfilled_at_start(plugin) -> None:
    await write(plugin, BASKETBALL, *OTHERS)

    await with_row_vectors(plugin)
    await row_vectors(plugin).settle()

    assert await vector_count(plugin) == len(OTHERS) + 1
    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL


async def test_vectors_survive_a_restart_without_being_computed_again(plugin) -> None:
    await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, *OTHERS)
    embedded = len(embedded_texts(plugin))

    await plugin.restart()
    await row_vectors(plugin).settle()

    assert len(embedded_texts(plugin)) == embedded
    assert await vector_count(plugin) == len(OTHERS) + 1
    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL


async def test_shutdown_does_not_wait_for_a_hanging_embedding_and_the_rows_get_vectors_later(
    plugin, monkeypatch
) -> None:
    await with_row_vectors(plugin)
    answer_now = threading.Event()
    respond = plugin.llm._embeddings

    def slowly(handler, record) -> None:
        answer_now.wait(5)  # the server's handler thread, not the event loop
        respond(handler, record)

    monkeypatch.setattr(plugin.llm, "_embeddings", slowly)
    writer = plugin.runtime.chat_log.writer
    for line in (BASKETBALL, *OTHERS):
        writer.add(row_of(line))
    await writer.flush()  # the rows' embedding request now hangs

    started = time.monotonic()
    await plugin.stop()
    stop_seconds = time.monotonic() - started
    answer_now.set()
    monkeypatch.setattr(plugin.llm, "_embeddings", respond)
    await plugin.start()
    await row_vectors(plugin).settle()

    assert stop_seconds < 1.0
    assert await vector_count(plugin) == len(OTHERS) + 1


async def test_retention_removes_the_vectors_of_the_rows_it_removes(plugin) -> None:
    await with_row_vectors(plugin)
    old = datetime.now(timezone.utc) - timedelta(days=400)
    await write(plugin, BASKETBALL, at=old)
    await write(plugin, *OTHERS)
    assert await vector_count(plugin) == len(OTHERS) + 1
    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL  # vectors read
    await plugin.runtime.chat_log.flush()
    await row_vectors(plugin).settle()  # (the search's own turn is logged too)
    before = await vector_count(plugin)

    await plugin.runtime.chat_log.writer.cleanup()

    assert await vector_count(plugin) == before - 1
    assert BASKETBALL not in await search(plugin, PARAPHRASE)


# ---------------------------------------------------------------- off by default


async def test_by_default_no_chat_row_is_sent_to_the_embedding_model(plugin) -> None:
    from nonebot_plugin_aimemory.chatlog.vectors import NoChatLogVectors

    await plugin.restart(
        aimemory_embedding_model="fake-embed", aimemory_embedding_api_base=plugin.llm.base_url
    )
    await write(plugin, BASKETBALL, *OTHERS)

    found = await search(plugin, PARAPHRASE)

    assert isinstance(plugin.runtime.chat_log.writer.vectors, NoChatLogVectors)
    assert found == []
    assert embedded_texts(plugin) == []


async def test_the_key_without_an_embedding_model_embeds_nothing(plugin) -> None:
    from nonebot_plugin_aimemory.chatlog.vectors import NoChatLogVectors

    await plugin.restart(aimemory_chat_log_embeddings=True)
    await write(plugin, BASKETBALL)

    assert isinstance(plugin.runtime.chat_log.writer.vectors, NoChatLogVectors)
    assert (await search(plugin, "basketball"))[0] == BASKETBALL
    assert plugin.llm.embedding_requests == []


def search_description(runtime) -> str:
    tools = {tool.name: tool for tool in runtime.chat_log.tools(GROUP)}
    return tools["search_current_chat"].spec()["function"]["description"]


async def test_the_search_tool_says_it_finds_by_meaning_only_when_rows_have_vectors(
    plugin, plugin_log
) -> None:
    from nonebot_plugin_aimemory.prompts import SEARCH_CURRENT_CHAT_BY_MEANING

    assert SEARCH_CURRENT_CHAT_BY_MEANING not in search_description(plugin.runtime)
    assert SEARCH_CURRENT_CHAT_BY_MEANING in search_description(await with_row_vectors(plugin))

    # Asked for without a model to make them: keyword search, and a warning saying why.
    runtime = await plugin.restart(aimemory_chat_log_embeddings=True, aimemory_embedding_model="")
    assert SEARCH_CURRENT_CHAT_BY_MEANING not in search_description(runtime)
    warnings = [r.getMessage() for r in plugin_log.records if r.levelname == "WARNING"]
    assert any(
        "aimemory_chat_log_embeddings" in w and "aimemory_embedding_model" in w for w in warnings
    )


async def test_rows_written_while_the_backfill_finds_nothing_more_are_still_embedded(
    plugin,
) -> None:
    await with_row_vectors(plugin)
    vectors = row_vectors(plugin)
    await vectors.settle()  # the start's backfill is done: nothing is missing
    store = vectors.store
    looking, go_on = asyncio.Event(), asyncio.Event()
    real_unembedded = store.unembedded

    async def slow_unembedded(*args, **kwargs):
        found = await real_unembedded(*args, **kwargs)
        looking.set()
        await go_on.wait()  # rows are written meanwhile
        return found

    store.unembedded = slow_unembedded  # type: ignore[method-assign]
    vectors.start()  # a backfill that will find nothing to do
    await looking.wait()
    writer = plugin.runtime.chat_log.writer
    writer.add(row_of(BASKETBALL))
    await writer.flush()  # handed to the worker, which is still looking
    go_on.set()
    await vectors.settle()

    assert await vector_count(plugin) == 1


async def test_a_change_of_model_embeds_every_row_again_newest_first_with_progress(
    plugin, monkeypatch, plugin_log
) -> None:
    from nonebot_plugin_aimemory.chatlog import vector_progress
    from nonebot_plugin_aimemory.chatlog import vectors as vectors_module

    await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, *OTHERS)
    rows = len(OTHERS) + 1
    monkeypatch.setattr(vector_progress, "PROGRESS_ROWS", 2)
    monkeypatch.setattr(vectors_module, "EMBED_BATCH_ROWS", 2)
    before = len(plugin.llm.embedding_requests)

    await with_row_vectors(plugin, aimemory_embedding_model="fake-embed-v2")
    await row_vectors(plugin).settle()

    assert row_vectors(plugin).maker.model == "fake-embed-v2"
    assert await vector_count(plugin) == rows
    requests = plugin.llm.embedding_requests[before:]
    assert {body["model"] for body in requests} == {"fake-embed-v2"}
    again = [text for body in requests for text in body["input"]]
    assert again[0] == as_embedded(OTHERS[-1])  # newest first
    assert sorted(again) == sorted(map(as_embedded, [BASKETBALL, *OTHERS]))
    lines = [r.getMessage() for r in plugin_log.records]
    progress = [line for line in lines if line.startswith("chat-log vectors")]
    assert progress[0].startswith(f"chat-log vectors: embedding {rows} rows with fake-embed-v2")
    assert progress[-1] == f"chat-log vectors: all {rows} rows embedded"
    assert (await search(plugin, PARAPHRASE))[0] == BASKETBALL


# ---------------------------------------------------------------- bad input


async def test_a_server_gone_after_the_rows_were_embedded_leaves_keyword_results(
    plugin,
) -> None:
    runtime = await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, *OTHERS)
    assert await vector_count(plugin) == len(OTHERS) + 1
    runtime.memory.service.embedder.pause_initial_seconds = 0.05
    plugin.llm.embeddings_fail = True  # the query's embedding fails: mid-search

    result = await model_calls(
        plugin, RecordingBot(), "search_current_chat", {"keyword": "basketball weekend"}
    )

    assert BASKETBALL in result
    assert "错误" not in result


async def test_vectors_of_another_length_under_the_same_model_rank_by_keyword(plugin) -> None:
    from nonebot_plugin_aimemory.store.packed_vectors import pack_vector

    await with_row_vectors(plugin)
    await write(plugin, BASKETBALL, *OTHERS)
    database = plugin.runtime.chat_log.writer.store.vectors.database
    # The server now answers with 3-dimensional vectors under the same model name.
    await database.write(
        lambda connection: connection.execute(
            "UPDATE chat_log_vectors SET vector = ?", (pack_vector([0.6, 0.8, 0.0]),)
        )
    )

    assert (await search(plugin, "basketball"))[0] == BASKETBALL
    result = await model_calls(
        plugin, RecordingBot(), "search_current_chat", {"keyword": PARAPHRASE}
    )
    assert "错误" not in result


async def test_a_question_in_a_script_the_segmenter_does_not_know_is_answered(plugin) -> None:
    thai = "พรุ่งนี้เจอกันที่สถานี"
    await with_row_vectors(plugin)
    await write(plugin, thai, *OTHERS)

    assert (await search(plugin, thai))[0] == thai
    # Amharic: nothing shared with any row; answered all the same.
    result = await model_calls(plugin, RecordingBot(), "search_current_chat", {"keyword": "ሰላም ነው"})
    assert "错误" not in result
