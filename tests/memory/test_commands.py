"""`~记忆` commands: people list, search, delete (leaving a tombstone), restore and clear
what the bot remembers; in groups only managers may change it."""

from __future__ import annotations

import pytest

from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import text
from tests.memory.helpers import command, model_calls_one, stored

GROUP = 901
SCOPE = f"g:{GROUP}"
VEGETARIAN = "小明(2001)吃素，不吃任何肉类"
TOMBSTONED = "未保存：这条内容已被用户手动删除，不能再次保存。"

MANAGERS = {
    "admin": {"role": "admin"},
    "owner": {"role": "owner"},
    "superuser": {"role": "member", "user_id": int(SUPERUSER_ID)},
}


def in_group(content: str, **sender):
    return group_message(content, group_id=GROUP, **sender)


def by_admin(content: str):
    return in_group(content, role="admin")


async def remember(plugin, content: str = VEGETARIAN, scope: str = SCOPE) -> str:
    outcome = await plugin.runtime.memory.service.save(scope, content)
    assert outcome.status == "saved"
    return outcome.memory.id


async def model_saves(plugin, bot: RecordingBot, content: str) -> str:
    event = group_message("记一下", group_id=GROUP, to_me=True)
    return await model_calls_one(plugin, bot, event, "memory_save", {"content": content})


async def model_forgets(plugin, bot: RecordingBot, memory_id: str) -> str:
    event = group_message("忘掉", group_id=GROUP, to_me=True)
    return await model_calls_one(plugin, bot, event, "memory_forget", {"id": memory_id})


# ---------------------------------------------------------------- tombstones


async def test_delete_marks_the_memory_deleted(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, by_admin(f"~记忆 删除 {memory_id}"))

    assert reply.startswith(f"已删除记忆 #{memory_id}：{VEGETARIAN}")
    assert await stored(plugin, SCOPE) == []
    assert [r.id for r in await stored(plugin, SCOPE, deleted=True)] == [memory_id]


async def test_the_delete_reply_is_one_line_with_the_undo_hint(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, by_admin(f"~记忆 删除 {memory_id}"))

    assert "\n" not in reply
    assert reply.endswith(f"~记忆 恢复 {memory_id}）")


async def test_content_a_person_deleted_is_refused_when_the_model_saves_it_again(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()
    await command(bot, by_admin(f"~记忆 删除 {memory_id}"))

    result = await model_saves(plugin, bot, "  小明(2001)吃素，不吃任何肉类 ")

    assert result == TOMBSTONED
    assert await stored(plugin, SCOPE) == []


async def test_the_tombstone_survives_a_restart(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()
    await command(bot, by_admin(f"~记忆 删除 {memory_id}"))

    await plugin.restart()
    result = await model_saves(plugin, bot, VEGETARIAN)

    assert result == TOMBSTONED


async def test_a_tombstone_in_one_group_does_not_block_another(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()
    await command(bot, by_admin(f"~记忆 删除 {memory_id}"))

    result = await model_calls_one(
        plugin,
        bot,
        group_message("记一下", group_id=902, to_me=True),
        "memory_save",
        {"content": VEGETARIAN},
    )

    assert result.startswith("已保存记忆 #")


async def test_forgetting_by_the_model_leaves_no_tombstone(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()
    await model_forgets(plugin, bot, memory_id)

    result = await model_saves(plugin, bot, VEGETARIAN)

    assert result.startswith("已保存记忆 #")


async def test_updating_another_memory_to_deleted_content_is_refused(plugin) -> None:
    deleted_id = await remember(plugin)
    other_id = await remember(plugin, "小明(2001)爱吃辣")
    bot = RecordingBot()
    await command(bot, by_admin(f"~记忆 删除 {deleted_id}"))

    event = group_message("改一下", group_id=GROUP, to_me=True)
    result = await model_calls_one(
        plugin, bot, event, "memory_update", {"id": other_id, "content": VEGETARIAN}
    )

    assert result == "未更新：这个内容已被用户手动删除过，不能再保存。"
    assert [r.content for r in await stored(plugin, SCOPE)] == ["小明(2001)爱吃辣"]


async def test_an_id_may_be_typed_with_a_hash_and_in_upper_case(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, by_admin(f"~记忆 删除 #{memory_id.upper()}"))

    assert reply.startswith(f"已删除记忆 #{memory_id}")


async def test_restore_brings_the_memory_back(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()
    await command(bot, by_admin(f"~记忆 删除 {memory_id}"))

    reply = await command(bot, by_admin(f"~记忆 恢复 {memory_id}"))

    assert reply == f"已恢复记忆 #{memory_id}：{VEGETARIAN}"
    assert [r.id for r in await stored(plugin, SCOPE)] == [memory_id]


async def test_restore_into_a_full_scope_is_refused(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    await plugin.restart(aimemory_memory_max_entries=2)
    memory_id = await remember(plugin)
    bot = RecordingBot()
    await command(bot, by_admin(f"~记忆 删除 {memory_id}"))
    await remember(plugin, "阿强(2002)对花生过敏")
    await remember(plugin, "老王(2003)住在杭州")

    reply = await command(bot, by_admin(f"~记忆 恢复 {memory_id}"))

    assert reply == texts.memory_full_for_restore(2)
    assert len(await stored(plugin, SCOPE)) == 2


async def test_restore_lifts_the_tombstone_for_good(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()
    await command(bot, by_admin(f"~记忆 删除 {memory_id}"))
    await command(bot, by_admin(f"~记忆 恢复 {memory_id}"))
    await plugin.restart()
    await model_forgets(plugin, bot, memory_id)  # the model's forget leaves no tombstone

    result = await model_saves(plugin, bot, VEGETARIAN)

    assert result.startswith("已保存记忆 #")


async def test_restoring_a_live_memory_says_there_is_nothing_to_restore(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    memory_id = await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, by_admin(f"~记忆 恢复 {memory_id}"))

    assert reply == texts.memory_nothing_to_restore(memory_id)


async def test_clear_asks_for_confirmation_first(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    await remember(plugin)
    await remember(plugin, "群里每周五晚上八点开例会")
    bot = RecordingBot()

    reply = await command(bot, by_admin("~记忆 清空"))

    assert reply == texts.memory_clear_confirm(2)
    assert len(await stored(plugin, SCOPE)) == 2


async def test_clear_confirmed_deletes_every_memory_of_the_scope(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    await remember(plugin)
    await remember(plugin, "群里每周五晚上八点开例会")
    await remember(plugin, "别的群的记忆", scope="g:902")
    bot = RecordingBot()

    reply = await command(bot, by_admin("~记忆 清空 确认"))

    assert reply == texts.memory_cleared(2)
    assert await stored(plugin, SCOPE) == []
    assert len(await stored(plugin, "g:902")) == 1


async def test_cleared_content_is_tombstoned(plugin) -> None:
    await remember(plugin)
    bot = RecordingBot()
    await command(bot, by_admin("~记忆 清空 确认"))

    assert await model_saves(plugin, bot, VEGETARIAN) == TOMBSTONED


# ---------------------------------------------------------------- permissions


@pytest.mark.parametrize(
    "action",
    ["删除 {id}", "恢复 {id}", "清空", "清空 确认"],
    ids=["delete", "restore", "clear", "confirm"],
)
async def test_a_plain_member_may_not_change_group_memories(plugin, action) -> None:
    from nonebot_plugin_aimemory import texts

    memory_id = await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, in_group("~记忆 " + action.format(id=memory_id), role="member"))

    assert reply == texts.PERMISSION_DENIED
    assert [r.id for r in await stored(plugin, SCOPE)] == [memory_id]


@pytest.mark.parametrize("who", MANAGERS.values(), ids=MANAGERS.keys())
async def test_group_managers_may_delete(plugin, who) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, in_group(f"~记忆 删除 {memory_id}", **who))

    assert reply.startswith(f"已删除记忆 #{memory_id}")
    assert await stored(plugin, SCOPE) == []


@pytest.mark.parametrize("action", ["列表", "搜索 吃素", "状态"])
async def test_a_plain_member_may_read_group_memories(plugin, action) -> None:
    from nonebot_plugin_aimemory import texts

    await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, in_group(f"~记忆 {action}", role="member"))

    assert reply != texts.PERMISSION_DENIED


async def test_in_a_private_chat_the_user_owns_their_memories(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    memory_id = await remember(plugin, scope="f:3901")
    bot = RecordingBot()

    deleted = await command(bot, private_message(f"~记忆 删除 {memory_id}", user_id=3901))
    restored = await command(bot, private_message(f"~记忆 恢复 {memory_id}", user_id=3901))
    cleared = await command(bot, private_message("~记忆 清空 确认", user_id=3901))

    assert deleted.startswith(f"已删除记忆 #{memory_id}")
    assert restored.startswith(f"已恢复记忆 #{memory_id}")
    assert cleared == texts.memory_cleared(1)


async def test_a_private_user_cannot_delete_someone_elses_memory(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    memory_id = await remember(plugin, scope="f:3902")
    bot = RecordingBot()

    reply = await command(bot, private_message(f"~记忆 删除 {memory_id}", user_id=3903))

    assert reply == f"没有编号为 #{memory_id} 的记忆。{texts.MEMORY_USAGE}"
    assert len(await stored(plugin, "f:3902")) == 1


# ---------------------------------------------------------------- reading


async def test_list_pages_ten_lines_each_starting_with_the_id(plugin) -> None:
    ids = [await remember(plugin, f"第{i}号群友的口头禅是“收到{i}”") for i in range(12)]
    bot = RecordingBot()

    first = await command(bot, in_group("~记忆 列表"))
    second = await command(bot, in_group("~记忆 列表 2"))

    newest_first = list(reversed(ids))
    first_lines, second_lines = first.splitlines(), second.splitlines()
    assert first_lines[0] == "记忆（第 1/2 页，共 12 条）："
    assert [line.split()[0] for line in first_lines[1:]] == [f"#{i}" for i in newest_first[:10]]
    assert second_lines[0] == "记忆（第 2/2 页，共 12 条）："
    assert [line.split()[0] for line in second_lines[1:]] == [f"#{i}" for i in newest_first[10:]]


async def test_list_of_an_empty_scope_says_so(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    assert await command(bot, in_group("~记忆 列表")) == texts.MEMORY_EMPTY


async def test_search_command_lists_matching_memories(plugin) -> None:
    memory_id = await remember(plugin)
    await remember(plugin, "群里每周五晚上八点开例会")
    bot = RecordingBot()

    reply = await command(bot, in_group("~记忆 搜索 吃素"))

    assert reply.splitlines() == ["与“吃素”相关的记忆：", f"#{memory_id} {VEGETARIAN}"]


async def test_search_command_without_hits_says_so(plugin) -> None:
    await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, in_group("~记忆 搜索 量子物理"))

    assert reply == "没有找到与“量子物理”相关的记忆。"


async def test_status_shows_count_max_and_auto_inject(plugin) -> None:
    await remember(plugin)
    await remember(plugin, "群里每周五晚上八点开例会")
    bot = RecordingBot()

    reply = await command(bot, in_group("~记忆 状态"))

    assert reply.splitlines()[:2] == ["记忆：2 / 200 条", "自动注入：开启（每次最多 3 条）"]


async def test_status_shows_auto_inject_off(plugin) -> None:
    await plugin.restart(aimemory_memory_auto_inject=False, aimemory_memory_max_entries=50)
    bot = RecordingBot()

    reply = await command(bot, in_group("~记忆 状态"))

    assert reply.splitlines()[:2] == ["记忆：0 / 50 条", "自动注入：关闭"]


@pytest.mark.parametrize(
    "typed",
    [
        "~记忆",
        "~记忆 飞起来",
        "~记忆 列表 abc",
        "~记忆 搜索",
        "~记忆 删除 !!!",
        "~记忆 恢复 这不是编号",
        "~记忆 清空 好的",
    ],
)
async def test_a_bad_action_or_argument_gets_the_usage_line(plugin, typed) -> None:
    from nonebot_plugin_aimemory import texts

    await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, by_admin(typed))

    assert reply == texts.MEMORY_USAGE
    assert len(await stored(plugin, SCOPE)) == 1


async def test_deleting_an_unknown_id_says_it_is_not_found_with_the_usage_line(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    reply = await command(bot, by_admin("~记忆 删除 zzzz"))

    assert reply == f"没有编号为 #zzzz 的记忆。{texts.MEMORY_USAGE}"


async def test_restoring_an_unknown_id_says_so_with_the_usage_line(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    await remember(plugin)
    bot = RecordingBot()

    reply = await command(bot, by_admin("~记忆 恢复 #zzzz"))

    assert reply == f"没有可恢复的记忆 #zzzz。{texts.MEMORY_USAGE}"


async def test_an_id_of_another_group_is_unknown_to_delete_and_restore(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    other_id = await remember(plugin, scope="g:902")
    bot = RecordingBot()

    deleted = await command(bot, by_admin(f"~记忆 删除 {other_id}"))
    restored = await command(bot, by_admin(f"~记忆 恢复 {other_id}"))

    assert deleted == f"没有编号为 #{other_id} 的记忆。{texts.MEMORY_USAGE}"
    assert restored == f"没有可恢复的记忆 #{other_id}。{texts.MEMORY_USAGE}"
    assert len(await stored(plugin, "g:902")) == 1


async def test_a_page_past_the_last_says_how_many_pages_there_are(plugin) -> None:
    for i in range(12):
        await remember(plugin, f"第{i}号群友的口头禅是“收到{i}”")
    bot = RecordingBot()

    reply = await command(bot, in_group("~记忆 列表 3"))

    assert reply == "没有第 3 页：记忆共 12 条，2 页。"


async def test_commands_never_reach_the_model(plugin) -> None:
    memory_id = await remember(plugin)
    bot = RecordingBot()

    for typed in ("~记忆 列表", "~记忆 搜索 吃素", f"~记忆 删除 {memory_id}", "~记忆 状态"):
        await command(bot, group_message(typed, group_id=GROUP, role="admin", to_me=True))

    assert plugin.llm.chat_requests == []


# ---------------------------------------------------------------- memory unavailable


async def unavailable(plugin, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    return await plugin.restart(aimemory_db_path=str(blocker / "aimemory.db"))


async def test_without_a_database_the_memory_tools_are_not_offered(plugin, tmp_path) -> None:
    await unavailable(plugin, tmp_path)
    plugin.llm.script(text("你好呀"))
    bot = RecordingBot()

    await bot.receive(private_message("你好", user_id=3904))

    offered = [t["function"]["name"] for t in plugin.llm.chat_requests[-1].get("tools") or []]
    assert not any(name.startswith("memory_") for name in offered)
    assert bot.sent_texts == ["你好呀"]


@pytest.mark.parametrize("typed", ["~记忆 列表", "~记忆 状态", "~记忆 删除 ab3d"])
async def test_without_a_database_commands_say_memory_is_unavailable(
    plugin, tmp_path, typed
) -> None:
    from nonebot_plugin_aimemory import texts

    await unavailable(plugin, tmp_path)
    bot = RecordingBot()

    reply = await command(bot, in_group(typed, role="member"))

    assert reply == texts.MEMORY_UNAVAILABLE
