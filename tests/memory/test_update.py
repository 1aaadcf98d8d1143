"""memory_update: an omitted field keeps its value, an explicitly empty one clears it, and
the result shows the entry as stored."""

from __future__ import annotations

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import embed_text
from tests.memory.helpers import model_calls_one, saved_id, stored

GROUP = 401
SCOPE = f"g:{GROUP}"


def asking():
    return group_message("改一下", group_id=GROUP, to_me=True)


async def saved_with_tags_and_user(plugin, bot: RecordingBot) -> str:
    arguments = {"content": "小明(2001)吃素", "tags": ["饮食"], "user_id": "2001"}
    return saved_id(await model_calls_one(plugin, bot, asking(), "memory_save", arguments))


async def update(plugin, bot: RecordingBot, **arguments) -> str:
    return await model_calls_one(plugin, bot, asking(), "memory_update", arguments)


async def the_record(plugin):
    (record,) = await stored(plugin, SCOPE)
    return record


def shown(plugin, record) -> str:
    """The record as a tool result shows it: with where it came from."""
    from nonebot_plugin_aimemory import texts

    return texts.attributed_line(record, plugin.runtime.memory.service.zone)


async def test_changing_only_the_content_keeps_tags_and_user_id(plugin) -> None:
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    await update(plugin, bot, id=memory_id, content="小明(2001)吃素，但吃鸡蛋")

    record = await the_record(plugin)
    assert (record.content, record.tags, record.user_id) == (
        "小明(2001)吃素，但吃鸡蛋",
        ["饮食"],
        "2001",
    )


async def test_empty_tags_clear_the_tags_and_keep_the_rest(plugin) -> None:
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    await update(plugin, bot, id=memory_id, tags=[])

    record = await the_record(plugin)
    assert (record.content, record.tags, record.user_id) == ("小明(2001)吃素", [], "2001")


async def test_empty_user_id_clears_it_and_keeps_the_rest(plugin) -> None:
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    await update(plugin, bot, id=memory_id, user_id="")

    record = await the_record(plugin)
    assert (record.content, record.tags, record.user_id) == ("小明(2001)吃素", ["饮食"], None)


async def test_update_result_shows_the_entry_as_stored_after_masking(plugin) -> None:

    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    result = await update(plugin, bot, id=memory_id, content="小明(2001)的手机号是13812345678")

    record = await the_record(plugin)
    assert record.content == "小明(2001)的手机号是138****5678"
    assert result == f"已更新记忆 {shown(plugin, record)}"


async def test_update_result_shows_the_truncated_entry_and_says_so(plugin) -> None:

    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)
    diary = "小明(2001)的日记：" + "今天天气很好。" * 400

    result = await update(plugin, bot, id=memory_id, content=diary)

    record = await the_record(plugin)
    assert record.content == diary[:2000]
    assert result == f"已更新记忆 {shown(plugin, record)}（内容超过 2000 字，已截断）"


@pytest.mark.parametrize("empty", ["", "   "], ids=["empty", "blank"])
async def test_empty_content_is_refused_and_nothing_changes(plugin, empty) -> None:
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    result = await update(plugin, bot, id=memory_id, content=empty)

    assert result == "未更新：content 不能为空；要删除请用 memory_forget。"
    assert (await the_record(plugin)).content == "小明(2001)吃素"


async def test_update_to_the_content_of_another_memory_is_refused(plugin) -> None:
    bot = RecordingBot()
    first_id = await saved_with_tags_and_user(plugin, bot)
    second = await model_calls_one(plugin, bot, asking(), "memory_save", {"content": "小明爱吃辣"})

    result = await update(plugin, bot, id=saved_id(second), content="小明(2001)吃素")

    assert result.startswith(f"未更新：与已有记忆 #{first_id} 内容相同")
    assert sorted(r.content for r in await stored(plugin, SCOPE)) == [
        "小明(2001)吃素",
        "小明爱吃辣",
    ]


async def test_unknown_id_is_not_found(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    result = await update(plugin, bot, id="zzzz", content="随便")

    assert result == texts.memory_not_found("zzzz")


async def test_content_change_recomputes_the_embedding(plugin) -> None:
    await plugin.restart(
        aimemory_embedding_model="fake-embed", aimemory_embedding_api_base=plugin.llm.base_url
    )
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)
    assert (await the_record(plugin)).embedding == pytest.approx(embed_text("小明(2001)吃素"))

    await update(plugin, bot, id=memory_id, content="Bob(2004) plays basketball every weekend")

    record = await the_record(plugin)
    assert record.embedding == pytest.approx(embed_text("Bob(2004) plays basketball every weekend"))


async def test_null_content_keeps_the_content_and_applies_the_other_fields(plugin) -> None:

    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    result = await update(plugin, bot, id=memory_id, content=None, tags=["口味"])

    record = await the_record(plugin)
    assert (record.content, record.tags, record.user_id) == ("小明(2001)吃素", ["口味"], "2001")
    assert result == f"已更新记忆 {shown(plugin, record)}"


@pytest.mark.parametrize("field", ["tags", "user_id"])
async def test_null_tags_or_user_id_clear_them(plugin, field) -> None:
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    await update(plugin, bot, id=memory_id, **{field: None})

    record = await the_record(plugin)
    assert record.content == "小明(2001)吃素"
    assert (record.tags, record.user_id) == (([], "2001") if field == "tags" else (["饮食"], None))


@pytest.mark.parametrize("content", [42, ["小明吃素"], {"text": "小明吃素"}, True])
async def test_content_that_is_not_a_string_gets_a_tool_error(plugin, content) -> None:
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    result = await update(plugin, bot, id=memory_id, content=content)

    assert result == "错误：content 必须是字符串"
    assert (await the_record(plugin)).content == "小明(2001)吃素"


@pytest.mark.parametrize("user_id", ["小明", "2001 小明", "-2001", 20.5])
async def test_a_user_id_that_is_not_a_qq_number_is_refused_and_kept(plugin, user_id) -> None:
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    result = await update(plugin, bot, id=memory_id, user_id=user_id)

    assert result == "错误：user_id 必须是 QQ 号（纯数字）；要清空请传空字符串"
    assert (await the_record(plugin)).user_id == "2001"


async def test_a_user_id_given_as_a_number_is_stored(plugin) -> None:
    bot = RecordingBot()
    memory_id = await saved_with_tags_and_user(plugin, bot)

    await update(plugin, bot, id=memory_id, user_id=2002)

    assert (await the_record(plugin)).user_id == "2002"


async def test_save_with_a_user_id_that_is_not_a_qq_number_is_refused(plugin) -> None:
    bot = RecordingBot()

    result = await model_calls_one(
        plugin, bot, asking(), "memory_save", {"content": "小明吃素", "user_id": "小明"}
    )

    assert result == "错误：user_id 必须是 QQ 号（纯数字）；要清空请传空字符串"
    assert await stored(plugin, SCOPE) == []


@pytest.mark.parametrize(
    "edited",
    ["Alice(2005) likes PYTHON", "Ａｌｉｃｅ(2005) likes Python"],
    ids=["case", "full width"],
)
async def test_a_case_or_width_only_edit_is_stored(plugin, edited) -> None:

    bot = RecordingBot()
    first = await model_calls_one(
        plugin, bot, asking(), "memory_save", {"content": "Alice(2005) likes Python"}
    )
    memory_id = saved_id(first)

    result = await update(plugin, bot, id=memory_id, content=edited)

    (record,) = await stored(plugin, SCOPE)
    assert (record.id, record.content) == (memory_id, edited)
    assert result == f"已更新记忆 {shown(plugin, record)}"
