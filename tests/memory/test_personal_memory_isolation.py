"""Personal memory follows its owner and nobody else: a public one (told in a group) is used
in any chat where its owner speaks, a private one (told in private) only in its owner's
private chat; another person's turns never carry either, checked in the requests the model
got."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.memory.helpers import command, model_calls_one, stored, told_today
from tests.memory.personal_helpers import (
    BIRTHDAY,
    BOB,
    BOB_SCOPE,
    CAKE,
    GROUP_A,
    GROUP_B,
    PERSONAL_ID,
    answer_briefly,
    bob_alone,
    bob_in,
    carol_alone,
    carol_in,
    injected_lines,
    last_user_content,
    requests_since,
    save_for_speaker,
    sent_text,
)
from tests.quoted_blocks import memory_hits


async def test_a_speaker_memory_saved_in_a_group_is_a_public_personal_memory(plugin) -> None:
    bot = RecordingBot()

    result = await model_calls_one(
        plugin,
        bot,
        bob_in(GROUP_A, "记住我最喜欢草莓蛋糕"),
        "memory_save",
        {"content": CAKE, "about": "speaker"},
    )

    (saved,) = await stored(plugin, BOB_SCOPE)
    assert PERSONAL_ID.fullmatch(saved.id)
    assert (saved.content, saved.private, saved.user_id) == (CAKE, False, str(BOB))
    said = told_today(plugin, "Bob", BOB)
    assert result == f"已保存记忆 #{saved.id} [个人] {CAKE} (关于 {BOB}){said}"
    assert await stored(plugin, f"g:{GROUP_A}") == []


async def test_a_speaker_memory_saved_in_private_is_private(plugin) -> None:
    bot = RecordingBot()

    result = await model_calls_one(
        plugin,
        bot,
        bob_alone("我生日是五月二日，别告诉群里"),
        "memory_save",
        {"content": BIRTHDAY, "about": "speaker"},
    )

    (saved,) = await stored(plugin, BOB_SCOPE)
    assert saved.private
    assert result.startswith(f"已保存记忆 #{saved.id} [个人·私密] {BIRTHDAY}")
    assert await stored(plugin, f"f:{BOB}") == []


async def test_bobs_public_memory_goes_with_bob_to_another_group_and_to_private(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    cake_id = await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    line = f"#{cake_id} [个人] 「{CAKE}」 (关于 {BOB}){told_today(plugin, 'Bob', BOB)}"

    await bot.receive(bob_in(GROUP_B, "我最喜欢吃什么蛋糕？"))
    in_other_group = injected_lines(last_user_content(plugin))
    await bot.receive(bob_alone("我最喜欢吃什么蛋糕？"))
    in_private = injected_lines(last_user_content(plugin))
    await bot.receive(bob_in(GROUP_A, "我最喜欢吃什么蛋糕？"))
    in_the_same_group = injected_lines(last_user_content(plugin))

    assert in_other_group == in_private == in_the_same_group == [line]


async def test_the_injected_block_says_which_lines_are_personal(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    answer_briefly(plugin)
    bot = RecordingBot()
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)

    await bot.receive(bob_in(GROUP_B, "我最喜欢吃什么蛋糕？"))

    header = last_user_content(plugin).splitlines()[0]
    assert header == prompts.MEMORY_INJECTION_HEADER + prompts.MEMORY_INJECTION_PERSONAL_NOTE


async def test_bobs_memories_are_never_in_carols_requests(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    cake_id = await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    birthday_id = await save_for_speaker(plugin, bot, bob_alone("记住我的生日"), BIRTHDAY)
    start = len(plugin.llm.chat_requests)

    await bot.receive(carol_in(GROUP_B, "Bob最喜欢吃什么蛋糕？Bob的生日是哪天？"))
    searched = await model_calls_one(
        plugin, bot, carol_in(GROUP_B, "查一下Bob"), "memory_search", {"query": "Bob 蛋糕 生日"}
    )
    listed = await model_calls_one(
        plugin, bot, carol_in(GROUP_B, "你记得什么"), "memory_search", {}
    )
    await bot.receive(carol_alone("Bob最喜欢吃什么蛋糕？Bob的生日是哪天？"))
    in_private = await model_calls_one(
        plugin, bot, carol_alone("查一下"), "memory_search", {"query": "Bob 蛋糕 生日"}
    )

    carols = sent_text(requests_since(plugin, start))
    for secret in ("草莓", "五月二日", cake_id, birthday_id, "[个人"):
        assert secret not in carols
    assert (searched, listed, in_private) == (
        "没有找到相关记忆。",
        "当前会话还没有任何记忆。",
        "没有找到相关记忆。",
    )


async def test_in_the_group_where_bob_saved_it_carol_still_does_not_get_it(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    cake_id = await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)

    await bot.receive(carol_in(GROUP_A, "Bob最喜欢吃什么蛋糕？"))
    injected = injected_lines(last_user_content(plugin))
    searched = await model_calls_one(
        plugin, bot, carol_in(GROUP_A, "查一下"), "memory_search", {"query": "草莓蛋糕"}
    )

    assert injected == []
    assert cake_id not in searched
    assert searched == "没有找到相关记忆。"


async def test_bobs_private_memory_never_reaches_a_group(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    answer_briefly(plugin)
    bot = RecordingBot()
    birthday_id = await save_for_speaker(plugin, bot, bob_alone("记住我的生日"), BIRTHDAY)
    start = len(plugin.llm.chat_requests)

    await bot.receive(bob_in(GROUP_A, "我的生日是哪天？"))
    injected = injected_lines(last_user_content(plugin))
    searched = await model_calls_one(
        plugin, bot, bob_in(GROUP_A, "查一下"), "memory_search", {"query": "生日"}
    )
    listed = await model_calls_one(
        plugin, bot, bob_in(GROUP_B, "你记得我什么"), "memory_search", {}
    )
    mine = await command(bot, bob_in(GROUP_A, "~记忆 我的"))

    assert injected == []
    assert searched == "没有找到相关记忆。"
    assert listed == "当前会话还没有任何记忆。"
    assert mine == texts.PERSONAL_MEMORY_EMPTY_HERE
    groups = sent_text(requests_since(plugin, start))
    assert "五月二日" not in groups
    assert birthday_id not in groups


async def test_bobs_private_memory_is_used_in_his_private_chat(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    birthday_id = await save_for_speaker(plugin, bot, bob_alone("记住我的生日"), BIRTHDAY)
    said = told_today(plugin, "Bob", BOB)
    line = f"#{birthday_id} [个人·私密] 「{BIRTHDAY}」 (关于 {BOB}){said}"

    await bot.receive(bob_alone("我的生日是哪天？"))
    injected = injected_lines(last_user_content(plugin))
    searched = await model_calls_one(
        plugin, bot, bob_alone("查一下"), "memory_search", {"query": "生日"}
    )

    assert injected == [line]  # quoted, with who said it, as the search shows it
    assert memory_hits(searched) == [line]


async def test_a_private_memory_made_public_is_used_in_groups(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    birthday_id = await save_for_speaker(plugin, bot, bob_alone("记住我的生日"), BIRTHDAY)

    await command(bot, bob_alone(f"~记忆 我的 公开 {birthday_id}"))
    await bot.receive(bob_in(GROUP_B, "我的生日是哪天？"))

    assert injected_lines(last_user_content(plugin)) == [
        f"#{birthday_id} [个人] 「{BIRTHDAY}」 (关于 {BOB}){told_today(plugin, 'Bob', BOB)}"
    ]


async def test_a_public_memory_made_private_leaves_the_groups(plugin) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    cake_id = await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)

    await command(bot, bob_in(GROUP_A, f"~记忆 我的 私密 {cake_id}"))
    await bot.receive(bob_in(GROUP_B, "我最喜欢吃什么蛋糕？"))
    in_group = injected_lines(last_user_content(plugin))
    await bot.receive(bob_alone("我最喜欢吃什么蛋糕？"))
    in_private = injected_lines(last_user_content(plugin))

    assert in_group == []
    said = told_today(plugin, "Bob", BOB)
    assert in_private == [f"#{cake_id} [个人·私密] 「{CAKE}」 (关于 {BOB}){said}"]


async def test_search_ranks_chat_and_personal_memories_together_with_distinct_ids(
    plugin,
) -> None:
    answer_briefly(plugin)
    bot = RecordingBot()
    cake_id = await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)
    group_cake = "群里下周五聚餐要订一个草莓蛋糕"
    chat = await plugin.runtime.memory.service.save(f"g:{GROUP_B}", group_cake)

    result = await model_calls_one(
        plugin, bot, bob_in(GROUP_B, "查一下蛋糕"), "memory_search", {"query": "草莓蛋糕"}
    )

    lines = memory_hits(result)
    assert sorted(lines) == sorted(
        [
            f"#{chat.memory.id} 「{group_cake}」",
            f"#{cake_id} [个人] 「{CAKE}」 (关于 {BOB}){told_today(plugin, 'Bob', BOB)}",
        ]
    )
    assert len(chat.memory.id) == 4
    assert not chat.memory.id.startswith("u")
    assert cake_id.startswith("u")
    assert len(cake_id) == 5


async def test_auto_inject_keeps_one_top_k_for_chat_and_personal_memories(plugin) -> None:
    await plugin.restart(aimemory_memory_inject_topk=2)
    answer_briefly(plugin)
    bot = RecordingBot()
    service = plugin.runtime.memory.service
    for dish in ("草莓蛋糕", "芒果蛋糕"):
        await service.save(f"g:{GROUP_B}", f"群里聚餐订过{dish}")
    await save_for_speaker(plugin, bot, bob_in(GROUP_A, "记住我爱草莓蛋糕"), CAKE)

    await bot.receive(bob_in(GROUP_B, "草莓蛋糕和芒果蛋糕哪个好？"))

    assert len(injected_lines(last_user_content(plugin))) == 2
