"""Optional embeddings: vectors on save, semantic search for paraphrases, keyword search
when the embedding server fails, and backfill of entries saved before embeddings."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import embed_text
from tests.memory.helpers import model_calls_one, saved_id, stored, wait_for
from tests.quoted_blocks import memory_hits

GROUP = 601
SCOPE = f"g:{GROUP}"
BASKETBALL = "Bob(2004) plays basketball every weekend"
# Shares no search term with BASKETBALL ("basketballer" is not "basketball", a Saturday
# is not a weekend), only character bigrams, which is what the fake embedding server measures.
PARAPHRASE = "basketballer saturdays"
OTHERS = ["小明(2001)吃素，不吃任何肉类", "群里每周五晚上八点开例会", "小红(2002)住在杭州西湖边"]


def asking(content: str = "记一下"):
    return group_message(content, group_id=GROUP, to_me=True)


async def with_embeddings(plugin):
    return await plugin.restart(
        aimemory_embedding_model="fake-embed", aimemory_embedding_api_base=plugin.llm.base_url
    )


async def seed(plugin) -> str:
    """Save BASKETBALL and a few unrelated memories; returns BASKETBALL's id."""
    memory = plugin.runtime.memory.service
    target = await memory.save(SCOPE, BASKETBALL)
    for content in OTHERS:
        await memory.save(SCOPE, content)
    return target.memory.id


async def test_a_saved_memory_gets_its_vector(plugin) -> None:
    await with_embeddings(plugin)
    bot = RecordingBot()

    await model_calls_one(plugin, bot, asking(), "memory_save", {"content": BASKETBALL})

    (record,) = await stored(plugin, SCOPE)
    assert record.embedding == pytest.approx(embed_text(BASKETBALL))


async def test_semantic_search_finds_a_paraphrase_without_shared_keywords(plugin) -> None:
    await with_embeddings(plugin)
    target_id = await seed(plugin)
    bot = RecordingBot()

    result = await model_calls_one(
        plugin, bot, asking("谁周末打球"), "memory_search", {"query": PARAPHRASE}
    )

    assert memory_hits(result)[0] == f"#{target_id} 「{BASKETBALL}」"


async def test_without_embeddings_the_paraphrase_is_not_found(plugin) -> None:
    await seed(plugin)
    bot = RecordingBot()

    result = await model_calls_one(
        plugin, bot, asking("谁周末打球"), "memory_search", {"query": PARAPHRASE}
    )

    assert result == "没有找到相关记忆。"


async def test_save_works_while_the_embedding_server_fails(plugin) -> None:
    await with_embeddings(plugin)
    plugin.llm.embeddings_fail = True
    bot = RecordingBot()

    result = await model_calls_one(plugin, bot, asking(), "memory_save", {"content": BASKETBALL})

    (record,) = await stored(plugin, SCOPE)
    assert saved_id(result) == record.id
    assert record.embedding is None


async def test_search_falls_back_to_keywords_while_the_embedding_server_fails(plugin) -> None:
    await with_embeddings(plugin)
    target_id = await seed(plugin)
    plugin.llm.embeddings_fail = True
    bot = RecordingBot()

    result = await model_calls_one(
        plugin, bot, asking("谁打篮球"), "memory_search", {"query": "basketball"}
    )

    assert memory_hits(result) == [f"#{target_id} 「{BASKETBALL}」"]


async def test_restart_with_embeddings_backfills_vectors_of_older_entries(plugin) -> None:
    await seed(plugin)
    assert all(r.embedding is None for r in await stored(plugin, SCOPE))

    await with_embeddings(plugin)

    async def all_have_vectors() -> bool:
        return all(r.embedding is not None for r in await stored(plugin, SCOPE))

    assert await wait_for(all_have_vectors)
    for record in await stored(plugin, SCOPE):
        assert record.embedding == pytest.approx(embed_text(record.content))


async def test_backfilled_vectors_are_used_by_search_at_once(plugin) -> None:
    target_id = await seed(plugin)
    runtime = await with_embeddings(plugin)

    async def backfilled() -> bool:
        return all(r.embedding is not None for r in await stored(plugin, SCOPE))

    assert await wait_for(backfilled)
    hits = await runtime.memory.service.search(SCOPE, PARAPHRASE)

    assert hits[0].memory.id == target_id


async def test_backfill_reaches_every_older_entry_not_only_the_first_batch(plugin) -> None:
    memory = plugin.runtime.memory.service
    for scope in ("g:602", "g:603"):
        for i in range(150):
            outcome = await memory.save(scope, f"第{i}号成员最喜欢的数字是{i * 7 + 3}")
            assert outcome.status == "saved"

    await with_embeddings(plugin)

    async def missing_vectors() -> int:
        rows = await plugin.runtime.database.read(
            "SELECT COUNT(*) FROM memories WHERE embedding IS NULL AND deleted_at IS NULL"
        )
        return rows[0][0]

    async def nothing_missing() -> bool:
        return await missing_vectors() == 0

    await wait_for(nothing_missing)
    assert await missing_vectors() == 0


# ---------------------------------------------------------------- a failing or hanging server


def hang_embeddings(plugin, monkeypatch, seconds: float) -> threading.Event:
    """Make the fake server answer embedding requests only after `seconds` (or once the
    returned event is set); chat completions are unaffected."""
    answer_now = threading.Event()
    respond = plugin.llm._embeddings

    def slowly(handler, record) -> None:
        answer_now.wait(seconds)  # the server's handler thread, not the event loop
        respond(handler, record)

    monkeypatch.setattr(plugin.llm, "_embeddings", slowly)
    return answer_now


async def timed_turn(bot: RecordingBot, content: str) -> float:
    started = time.monotonic()
    await bot.receive(asking(content))
    return time.monotonic() - started


async def test_after_a_failure_the_embedding_server_is_left_alone_for_a_while(plugin) -> None:
    await with_embeddings(plugin)
    await seed(plugin)
    plugin.llm.embeddings_fail = True
    before = len(plugin.llm.embedding_requests)
    bot = RecordingBot()

    for question in ("谁打篮球", "Bob plays basketball?", "basketball 周末"):
        await bot.receive(asking(question))

    assert len(plugin.llm.embedding_requests) == before + 1


async def test_a_hanging_embedding_server_costs_one_timeout_not_one_per_turn(
    plugin, monkeypatch
) -> None:
    from nonebot_plugin_aimemory import prompts

    runtime = await with_embeddings(plugin)
    target_id = await seed(plugin)
    runtime.memory.service.embedder.timeout_seconds = 0.3
    answer_now = hang_embeddings(plugin, monkeypatch, seconds=5)
    bot = RecordingBot()

    try:
        first = await timed_turn(bot, "谁打 basketball")
        later = [await timed_turn(bot, "谁打 basketball") for _ in range(3)]
    finally:
        answer_now.set()

    assert first >= 0.3
    assert max(later) < 0.3
    # Keyword search goes on meanwhile: the memory is still injected.
    sent = plugin.llm.last_messages()[-1]["content"]
    assert sent.startswith(prompts.MEMORY_INJECTION_HEADER)
    assert f"#{target_id} " in sent


async def test_a_save_does_not_hold_its_scope_while_the_embedding_is_computed(
    plugin, monkeypatch
) -> None:
    runtime = await with_embeddings(plugin)
    memory = runtime.memory.service
    other_id = (await memory.save(SCOPE, OTHERS[0])).memory.id
    answer_now = hang_embeddings(plugin, monkeypatch, seconds=1)

    try:
        saving = asyncio.ensure_future(memory.save(SCOPE, BASKETBALL))
        await asyncio.sleep(0.1)  # the save is waiting for its vector
        started = time.monotonic()
        forgotten = await memory.forget(SCOPE, other_id, by_person=True)
        forget_seconds = time.monotonic() - started
    finally:
        answer_now.set()
    saved = await saving

    assert forgotten is not None
    assert forget_seconds < 0.3
    assert saved.status == "saved"
    assert saved.memory.embedding == pytest.approx(embed_text(BASKETBALL))


async def test_memories_saved_while_the_server_was_down_get_vectors_once_it_is_back(
    plugin,
) -> None:
    runtime = await with_embeddings(plugin)
    runtime.memory.service.embedder.pause_initial_seconds = 0.05
    plugin.llm.embeddings_fail = True
    bot = RecordingBot()
    await model_calls_one(plugin, bot, asking(), "memory_save", {"content": BASKETBALL})
    assert [r.embedding for r in await stored(plugin, SCOPE)] == [None]

    plugin.llm.embeddings_fail = False
    await asyncio.sleep(0.1)  # the pause is over
    await bot.receive(asking("谁周末打篮球"))  # the first embedding call that works again

    async def has_vector() -> bool:
        return all(r.embedding is not None for r in await stored(plugin, SCOPE))

    assert await wait_for(has_vector)
    (record,) = await stored(plugin, SCOPE)
    assert record.embedding == pytest.approx(embed_text(BASKETBALL))


async def test_the_pause_doubles_while_failures_go_on_and_resets_after_a_success(llm) -> None:
    from nonebot_plugin_aimemory.engine.embeddings import EmbeddingClient
    from nonebot_plugin_aimemory.engine.errors import LLMError
    from nonebot_plugin_aimemory.engine.llm import Endpoint

    now = [1000.0]
    async with httpx.AsyncClient() as http:
        client = EmbeddingClient(
            http, Endpoint(llm.base_url, "sk-test", "fake-embed"), clock=lambda: now[0]
        )
        llm.embeddings_fail = True
        pauses = []
        for _ in range(6):
            with pytest.raises(LLMError):
                await client.embed(["hi"])
            started = now[0]
            while client.paused:
                now[0] += 1
            pauses.append(now[0] - started)
        requests_while_failing = len(llm.embedding_requests)
        llm.embeddings_fail = False
        await client.embed(["hi"])
        llm.embeddings_fail = True
        with pytest.raises(LLMError):
            await client.embed(["hi"])
        started = now[0]
        while client.paused:
            now[0] += 1

    assert pauses == [60, 120, 240, 480, 600, 600]
    assert requests_while_failing == 6
    assert now[0] - started == 60


# ------------------------------------------------------ how queries and memories are marked


async def embedding_inputs_of_a_save_and_a_search(plugin) -> list[dict]:
    """The embedding requests (model left out) while the model saves a memory and then
    searches for it (the auto-inject of each turn embeds the message too)."""
    bot = RecordingBot()
    before = len(plugin.llm.embedding_requests)
    await model_calls_one(plugin, bot, asking(), "memory_save", {"content": BASKETBALL})
    await model_calls_one(plugin, bot, asking("查一下"), "memory_search", {"query": "basketball"})
    return [
        {key: value for key, value in body.items() if key != "model"}
        for body in plugin.llm.embedding_requests[before:]
    ]


async def test_an_e5_model_gets_query_and_passage_prefixes(plugin) -> None:
    await plugin.restart(
        aimemory_embedding_model="intfloat/multilingual-e5-small",
        aimemory_embedding_api_base=plugin.llm.base_url,
    )

    requests = await embedding_inputs_of_a_save_and_a_search(plugin)

    assert {"input": [f"passage: {BASKETBALL}"]} in requests
    assert {"input": ["query: basketball"]} in requests
    (record,) = await stored(plugin, SCOPE)
    assert record.embedding == pytest.approx(embed_text(f"passage: {BASKETBALL}"))


async def test_another_model_gets_the_bare_text(plugin) -> None:
    await with_embeddings(plugin)

    requests = await embedding_inputs_of_a_save_and_a_search(plugin)

    assert {"input": [BASKETBALL]} in requests
    assert {"input": ["basketball"]} in requests


async def test_input_type_marks_the_role_in_the_request_not_the_text(plugin) -> None:
    await plugin.restart(
        aimemory_embedding_model="multilingual-e5-small",
        aimemory_embedding_api_base=plugin.llm.base_url,
        aimemory_embedding_prefixes="input_type",
    )

    requests = await embedding_inputs_of_a_save_and_a_search(plugin)

    assert {"input": [BASKETBALL], "input_type": "passage"} in requests
    assert {"input": ["basketball"], "input_type": "query"} in requests


async def test_prefixes_can_be_given_as_query_bar_passage(plugin) -> None:
    await plugin.restart(
        aimemory_embedding_model="bge-large-zh-v1.5",
        aimemory_embedding_api_base=plugin.llm.base_url,
        aimemory_embedding_prefixes="为这个句子生成表示以用于检索相关文章：|",
    )

    requests = await embedding_inputs_of_a_save_and_a_search(plugin)

    assert {"input": [BASKETBALL]} in requests
    assert {"input": ["为这个句子生成表示以用于检索相关文章：basketball"]} in requests


@pytest.mark.parametrize(
    ("model", "query_prefix", "passage_prefix"),
    [
        ("multilingual-e5-large", "query: ", "passage: "),
        ("intfloat/e5-base-v2", "query: ", "passage: "),
        ("nomic-embed-text:v1.5", "search_query: ", "search_document: "),
        ("text-embedding-3-small", "", ""),
        ("bge-m3", "", ""),
    ],
)
def test_auto_knows_the_prefixes_of_known_model_families(
    model, query_prefix, passage_prefix
) -> None:
    from nonebot_plugin_aimemory.engine.embeddings import EmbeddingRoles

    roles = EmbeddingRoles.from_setting("auto", model)

    assert (roles.query_prefix, roles.passage_prefix) == (query_prefix, passage_prefix)


def test_an_e5_instruct_model_gets_its_instruction_on_queries_only() -> None:
    from nonebot_plugin_aimemory.engine.embeddings import EmbeddingRoles

    roles = EmbeddingRoles.from_setting("auto", "intfloat/multilingual-e5-large-instruct")

    assert roles.query_prefix.startswith("Instruct: ")
    assert roles.query_prefix.endswith("\nQuery: ")
    assert roles.passage_prefix == ""


def test_an_unknown_prefix_setting_is_a_config_error() -> None:
    from pydantic import ValidationError

    from nonebot_plugin_aimemory.config import Config

    with pytest.raises(ValidationError, match="aimemory_embedding_prefixes"):
        Config(aimemory_embedding_prefixes="e5")


async def test_a_change_of_prefixes_makes_every_vector_again_in_the_background(plugin) -> None:
    await with_embeddings(plugin)
    target_id = await seed(plugin)
    plugin.llm.embeddings_fail = True  # the new vectors cannot be made yet

    await plugin.restart(aimemory_embedding_prefixes="q: |p: ")

    # The old vectors are not compared with the new queries; keyword search works.
    assert all(r.embedding is None for r in await stored(plugin, SCOPE))
    hits = await plugin.runtime.memory.service.search(SCOPE, "basketball")
    assert hits[0].memory.id == target_id

    plugin.llm.embeddings_fail = False
    await plugin.restart()

    async def made_again() -> bool:
        return all(r.embedding is not None for r in await stored(plugin, SCOPE))

    assert await wait_for(made_again)
    for record in await stored(plugin, SCOPE):
        assert record.embedding == pytest.approx(embed_text(f"p: {record.content}"))
