"""`~记忆 我的 …`: everyone lists, deletes, restores, clears and makes public or private
their own personal memories, in any chat (a group sees the public ones only); nobody else's
are reachable, except that a SUPERUSER may delete them; the group's own commands never touch
them."""

from __future__ import annotations

from tests.conftest import SUPERUSER_ID
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import command, model_calls_one, stored
from tests.memory.personal_helpers import (
    BIRTHDAY,
    BOB,
    BOB_SCOPE,
    CAKE,
    CAROL_SCOPE,
    GROUP_A,
    GROUP_B,
    answer_briefly,
    bob_alone,
    bob_in,
    carol_alone,
    carol_in,
    save_for_speaker,
)

TOMBSTONED = "未保存：这条内容已被用户手动删除，不能再次保存。"


async def bob_remembers(plugin, content: str = CAKE, *, private: bool = False) -> str:
    outcome = await plugin.runtime.memory.service.save(
        BOB_SCOPE, content, user_id=str(BOB), private=private
    )
    assert outcome.status == "saved"
    return outcome.memory.id


def by_superuser(content: str):
    return group_message(content, group_id=GROUP_A, user_id=int(SUPERUSER_ID))


# ---------------------------------------------------------------- listing


async def test_mine_lists_the_callers_memories_like_the_chat_listing(plugin) -> None:
    cake_id = await bob_remembers(plugin)
    bot = RecordingBot()

    reply = await command(bot, bob_in(GROUP_A, "~记忆 我的"))

    assert reply.splitlines() == [
        "你的个人记忆（第 1/1 页，共 1 条，私密的只在私聊里显示）：",
        f"#{cake_id} [个人] {CAKE} (关于 {BOB})",
    ]


async def test_mine_in_private_lists_private_memories_too_marked(plugin) -> None:
    cake_id = await bob_remembers(plugin)
    birthday_id = await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    reply = await command(bot, bob_alone("~记忆 我的"))

    header, *lines = reply.splitlines()
    assert header == "你的个人记忆（第 1/1 页，共 2 条）："
    assert sorted(lines) == sorted(
        [
            f"#{cake_id} [个人] {CAKE} (关于 {BOB})",
            f"#{birthday_id} [个人·私密] {BIRTHDAY} (关于 {BOB})",
        ]
    )


async def test_mine_in_a_group_leaves_private_memories_out(plugin) -> None:
    cake_id = await bob_remembers(plugin)
    await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    reply = await command(bot, bob_in(GROUP_B, "~记忆 我的"))

    assert reply.splitlines()[1:] == [f"#{cake_id} [个人] {CAKE} (关于 {BOB})"]
    assert "五月二日" not in reply


async def test_mine_shows_only_the_callers_memories(plugin) -> None:
    await bob_remembers(plugin)
    carols = await plugin.runtime.memory.service.save(CAROL_SCOPE, "Carol养了一只橘猫")
    bot = RecordingBot()

    in_group = await command(bot, carol_in(GROUP_A, "~记忆 我的"))
    in_private = await command(bot, carol_alone("~记忆 我的"))

    for reply in (in_group, in_private):
        assert reply.splitlines()[1:] == [f"#{carols.memory.id} [个人] Carol养了一只橘猫"]
        assert "草莓" not in reply


async def test_mine_without_memories_says_so(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    assert await command(bot, bob_alone("~记忆 我的")) == texts.PERSONAL_MEMORY_EMPTY
    assert await command(bot, bob_in(GROUP_A, "~记忆 我的")) == texts.PERSONAL_MEMORY_EMPTY_HERE


async def test_mine_pages_like_the_chat_listing(plugin) -> None:
    for n in range(12):
        await bob_remembers(plugin, f"Bob的第{n}个爱好是收集第{n}种邮票")
    bot = RecordingBot()

    second = await command(bot, bob_alone("~记忆 我的 2"))
    third = await command(bot, bob_alone("~记忆 我的 3"))

    assert second.splitlines()[0] == "你的个人记忆（第 2/2 页，共 12 条）："
    assert len(second.splitlines()) == 3
    assert third == "没有第 3 页：记忆共 12 条，2 页。"


async def test_the_chat_listing_never_shows_personal_memories(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    await bob_remembers(plugin)
    bot = RecordingBot()

    reply = await command(bot, bob_in(GROUP_A, "~记忆 列表"))

    assert reply == texts.MEMORY_EMPTY


# ---------------------------------------------------------------- deleting


async def test_the_owner_deletes_a_personal_memory_with_a_tombstone(plugin) -> None:
    answer_briefly(plugin)
    cake_id = await bob_remembers(plugin)
    bot = RecordingBot()

    reply = await command(bot, bob_in(GROUP_B, f"~记忆 我的 删除 {cake_id}"))
    again = await model_calls_one(
        plugin,
        bot,
        bob_in(GROUP_A, "记住"),
        "memory_save",
        {"content": CAKE, "about": "speaker"},
    )

    assert reply.startswith(f"已删除你的个人记忆 #{cake_id}：{CAKE}")
    assert await stored(plugin, BOB_SCOPE) == []
    assert again == TOMBSTONED


async def test_the_owner_restores_a_deleted_personal_memory(plugin) -> None:
    cake_id = await bob_remembers(plugin)
    bot = RecordingBot()
    await command(bot, bob_alone(f"~记忆 我的 删除 {cake_id}"))

    reply = await command(bot, bob_alone(f"~记忆 我的 恢复 {cake_id}"))

    assert reply == f"已恢复你的个人记忆 #{cake_id}：{CAKE}"
    assert [r.id for r in await stored(plugin, BOB_SCOPE)] == [cake_id]


async def test_another_member_cannot_delete_bobs_memory_and_hears_not_found(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    cake_id = await bob_remembers(plugin)
    bot = RecordingBot()

    by_id = await command(bot, carol_in(GROUP_A, f"~记忆 我的 删除 {cake_id}"))
    nonexistent = await command(bot, carol_in(GROUP_A, "~记忆 我的 删除 uzzzz"))
    by_admin = await command(bot, carol_in(GROUP_A, f"~记忆 我的 删除 {cake_id}", role="admin"))
    naming_bob = await command(bot, carol_in(GROUP_A, f"~记忆 我的 删除 {cake_id} {BOB}"))

    assert by_id == texts.personal_memory_not_found(cake_id)
    assert nonexistent == texts.personal_memory_not_found("uzzzz")
    assert by_admin == texts.personal_memory_not_found(cake_id)
    assert naming_bob == texts.PERSONAL_MEMORY_OTHERS_DENIED
    assert [r.id for r in await stored(plugin, BOB_SCOPE)] == [cake_id]


async def test_the_model_in_carols_turn_cannot_update_or_forget_bobs_memory(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    cake_id = await bob_remembers(plugin)
    bot = RecordingBot()

    updated = await model_calls_one(
        plugin,
        bot,
        carol_in(GROUP_A, "改一下"),
        "memory_update",
        {"id": cake_id, "content": "Bob讨厌草莓蛋糕"},
    )
    forgotten = await model_calls_one(
        plugin, bot, carol_in(GROUP_A, "忘掉"), "memory_forget", {"id": cake_id}
    )

    assert updated == forgotten == texts.memory_not_found(cake_id)
    (kept,) = await stored(plugin, BOB_SCOPE)
    assert kept.content == CAKE


async def test_the_model_in_bobs_turn_updates_and_forgets_his_memory(plugin) -> None:
    cake_id = await bob_remembers(plugin)
    bot = RecordingBot()

    updated = await model_calls_one(
        plugin,
        bot,
        bob_in(GROUP_B, "我改口味了"),
        "memory_update",
        {"id": f"#{cake_id.upper()}", "content": "Bob最喜欢吃芒果蛋糕"},
    )
    forgotten = await model_calls_one(
        plugin, bot, bob_in(GROUP_B, "忘掉"), "memory_forget", {"id": cake_id}
    )

    assert updated == f"已更新记忆 #{cake_id} [个人] Bob最喜欢吃芒果蛋糕 (关于 {BOB})"
    assert forgotten == f"已删除记忆 #{cake_id}。"
    assert await stored(plugin, BOB_SCOPE) == []


async def test_in_a_group_bobs_private_memory_cannot_be_updated_or_forgotten(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    birthday_id = await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    updated = await model_calls_one(
        plugin,
        bot,
        bob_in(GROUP_A, "改一下"),
        "memory_update",
        {"id": birthday_id, "content": "Bob的生日是六月一日"},
    )
    forgotten = await model_calls_one(
        plugin, bot, bob_in(GROUP_A, "忘掉"), "memory_forget", {"id": birthday_id}
    )
    deleted = await command(bot, bob_in(GROUP_A, f"~记忆 我的 删除 {birthday_id}"))

    assert updated == forgotten == texts.memory_not_found(birthday_id)
    assert deleted == texts.personal_memory_not_found(birthday_id)
    (kept,) = await stored(plugin, BOB_SCOPE)
    assert kept.content == BIRTHDAY


async def test_a_superuser_deletes_someones_personal_memory(plugin) -> None:
    cake_id = await bob_remembers(plugin)
    birthday_id = await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    public = await command(bot, by_superuser(f"~记忆 我的 删除 {cake_id} {BOB}"))
    private = await command(bot, by_superuser(f"~记忆 我的 删除 {birthday_id} {BOB}"))

    assert public == f"已删除 {BOB} 的个人记忆 #{cake_id}。"
    assert private == f"已删除 {BOB} 的个人记忆 #{birthday_id}。"
    assert await stored(plugin, BOB_SCOPE) == []
    tombstones = await plugin.runtime.memory.service.store.load_tombstones(BOB_SCOPE)
    assert sorted(tombstones.values()) == sorted([cake_id, birthday_id])


async def test_a_superuser_deleting_an_unknown_id_hears_not_found(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    await bob_remembers(plugin)
    bot = RecordingBot()

    reply = await command(bot, by_superuser(f"~记忆 我的 删除 uzzzz {BOB}"))

    assert reply == texts.personal_memory_not_found("uzzzz")
    assert len(await stored(plugin, BOB_SCOPE)) == 1


async def test_an_admins_clear_leaves_personal_memories_alone(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    cake_id = await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    await plugin.runtime.memory.service.save(f"g:{GROUP_A}", "群里每周五晚上八点开例会")
    admin = carol_in(GROUP_A, "~记忆 清空", role="admin")
    confirm = carol_in(GROUP_A, "~记忆 清空 确认", role="admin")

    asked = await command(bot, admin)
    cleared = await command(bot, confirm)

    assert asked == "确定要清空本会话的全部 1 条记忆吗？确认请发送：~记忆 清空 确认"
    assert cleared == "已清空 1 条记忆。"
    assert [r.id for r in await stored(plugin, BOB_SCOPE)] == [cake_id]


async def test_an_admins_delete_does_not_reach_personal_memories(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    cake_id = await bob_remembers(plugin)
    bot = RecordingBot()

    reply = await command(bot, carol_in(GROUP_A, f"~记忆 删除 {cake_id}", role="admin"))

    assert reply == texts.memory_not_found_with_usage(cake_id)
    assert len(await stored(plugin, BOB_SCOPE)) == 1


# ---------------------------------------------------------------- clearing and visibility


async def test_the_owner_clears_all_personal_memories_in_private_after_confirming(plugin) -> None:
    await bob_remembers(plugin)
    await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    asked = await command(bot, bob_alone("~记忆 我的 清空"))
    kept = len(await stored(plugin, BOB_SCOPE))
    cleared = await command(bot, bob_alone("~记忆 我的 清空 确认"))

    assert asked == "确定要清空你全部 2 条个人记忆吗？确认请发送：~记忆 我的 清空 确认"
    assert kept == 2
    assert cleared == "已清空你的 2 条个人记忆。"
    assert await stored(plugin, BOB_SCOPE) == []


async def test_clearing_in_a_group_clears_the_public_ones_only(plugin) -> None:
    await bob_remembers(plugin)
    birthday_id = await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    asked = await command(bot, bob_in(GROUP_A, "~记忆 我的 清空"))
    cleared = await command(bot, bob_in(GROUP_A, "~记忆 我的 清空 确认"))

    assert asked == "确定要清空你公开的 1 条个人记忆吗？确认请发送：~记忆 我的 清空 确认"
    assert cleared == "已清空你的 1 条个人记忆。"
    assert [r.id for r in await stored(plugin, BOB_SCOPE)] == [birthday_id]


async def test_making_public_and_private_changes_visibility(plugin) -> None:
    birthday_id = await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    public = await command(bot, bob_alone(f"~记忆 我的 公开 {birthday_id}"))
    made_public = (await stored(plugin, BOB_SCOPE))[0].private
    private = await command(bot, bob_in(GROUP_A, f"~记忆 我的 私密 {birthday_id}"))
    made_private = (await stored(plugin, BOB_SCOPE))[0].private

    assert public.startswith(f"已公开个人记忆 #{birthday_id}：{BIRTHDAY}")
    assert private == f"已将个人记忆 #{birthday_id} 设为私密：之后只在你和我的私聊里使用。"
    assert "五月二日" not in private
    assert (made_public, made_private) == (False, True)


async def test_another_member_cannot_change_bobs_visibility(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    birthday_id = await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    reply = await command(bot, carol_alone(f"~记忆 我的 公开 {birthday_id}"))

    assert reply == texts.personal_memory_not_found(birthday_id)
    assert (await stored(plugin, BOB_SCOPE))[0].private


async def test_a_bad_personal_action_gets_the_personal_usage_line(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    cake_id = await bob_remembers(plugin)
    bot = RecordingBot()

    for typed in (
        "~记忆 我的 飞起来",
        "~记忆 我的 删除",
        "~记忆 我的 删除 !!!",
        "~记忆 我的 清空 好的",
        f"~记忆 我的 删除 {cake_id} 不是QQ号",
        "~记忆 我的 0",
    ):
        assert await command(bot, bob_alone(typed)) == texts.PERSONAL_MEMORY_USAGE, typed
    assert len(await stored(plugin, BOB_SCOPE)) == 1


async def test_the_status_shows_the_callers_personal_count(plugin) -> None:
    await bob_remembers(plugin)
    await bob_remembers(plugin, BIRTHDAY, private=True)
    bot = RecordingBot()

    in_group = await command(bot, bob_in(GROUP_A, "~记忆 状态"))
    in_private = await command(bot, bob_alone("~记忆 状态"))

    assert in_group.splitlines()[:3] == [
        "记忆：0 / 200 条",
        "自动注入：开启（每次最多 3 条）",
        "你的个人记忆：1 / 100 条（不含私密的）",
    ]
    assert in_private.splitlines()[2] == "你的个人记忆：2 / 100 条"


async def test_the_usage_line_names_the_personal_commands(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()

    reply = await command(bot, bob_in(GROUP_A, "~记忆"))

    assert reply == texts.MEMORY_USAGE
    assert "我的" in texts.MEMORY_USAGE
