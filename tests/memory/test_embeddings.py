"""Optional embeddings: vectors on save, semantic search for paraphrases, keyword search
when the embedding server fails, and backfill of entries saved before embeddings."""

from __future__ import annotations

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import embed_text
from tests.memory.helpers import model_calls_one, saved_id, stored, wait_for

GROUP = 601
SCOPE = f"g:{GROUP}"
BASKETBALL = "Bob(2004) plays basketball every weekend"
# Shares no search token with BASKETBALL ("basketballer" is not "basketball"), only
# character bigrams, which is what the fake embedding server measures.
PARAPHRASE = "basketballer weekends"
OTHERS = ["小明(2001)吃素，不吃任何肉类", "群里每周五晚上八点开例会", "小红(2002)住在杭州西湖边"]


def asking(content: str = "记一下"):
    return group_message(content, group_id=GROUP, to_me=True)


async def with_embeddings(plugin):
    return await plugin.restart(
        aimemory_embedding_model="fake-embed", aimemory_embedding_api_base=plugin.llm.base_url
    )


async def seed(plugin) -> str:
    """Save BASKETBALL and a few unrelated memories; returns BASKETBALL's id."""
    memory = plugin.runtime.memory
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

    assert result == f"#{target_id} {BASKETBALL}"


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

    assert result == f"#{target_id} {BASKETBALL}"


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
    hits = await runtime.memory.search(SCOPE, PARAPHRASE)

    assert [hit.memory.id for hit in hits] == [target_id]


async def test_backfill_reaches_every_older_entry_not_only_the_first_batch(plugin) -> None:
    memory = plugin.runtime.memory
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
