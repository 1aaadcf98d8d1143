"""Auto-inject: the memories relevant to a message go before it for that turn only, under
a header, at most top-k of them and about 1500 characters."""

from __future__ import annotations

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import text
from tests.memory.helpers import stored_bodies
from tests.quoted_blocks import injected_block

GROUP = 701
SCOPE = f"g:{GROUP}"
VEGETARIAN = "小明(2001)吃素，不吃任何肉类"


@pytest.fixture(autouse=True)
def plain_answers(plugin) -> None:
    """The model answers in its own words: the fake server's echo of the whole message
    would say the quoted notes back, and such an answer is asked for again
    (engine/stock_replies.py), which these tests are not about."""
    plugin.llm.responder = lambda body: text("好的")


def asking(content: str):
    return group_message(content, group_id=GROUP, to_me=True)


async def remember(plugin, content: str, scope: str = SCOPE) -> str:
    outcome = await plugin.runtime.memory.service.save(scope, content)
    assert outcome.status == "saved"
    return outcome.memory.id


def last_user_content(plugin) -> str:
    return plugin.llm.last_messages()[-1]["content"]


def memory_lines(user_content: str) -> list[str]:
    """The memory lines of the block before the member's message."""
    block = injected_block(user_content)
    assert block.after, f"no message after the block:\n{user_content}"
    return block.inside


def block_chars(user_content: str) -> int:
    """The length of the block's header and memory lines (what the budget counts)."""
    from nonebot_plugin_aimemory import prompts

    return len("\n".join([prompts.MEMORY_INJECTION_HEADER, *memory_lines(user_content)]))


async def test_a_relevant_memory_goes_before_the_message_under_the_header(plugin) -> None:
    memory_id = await remember(plugin, VEGETARIAN)
    bot = RecordingBot()

    await bot.receive(asking("小明吃素吗？"))

    content = last_user_content(plugin)
    assert memory_lines(content) == [f"#{memory_id} 「{VEGETARIAN}」"]
    assert content.endswith("小明(2001)：小明吃素吗？")


async def test_the_injected_block_is_not_persisted(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    await remember(plugin, VEGETARIAN)
    bot = RecordingBot()

    await bot.receive(asking("小明吃素吗？"))

    user_rows = [b for b in await stored_bodies(plugin, SCOPE) if b["role"] == "user"]
    assert len(user_rows) == 1
    assert user_rows[0]["content"].endswith("小明(2001)：小明吃素吗？")
    assert prompts.MEMORY_INJECTION_HEADER not in user_rows[0]["content"]
    assert VEGETARIAN not in user_rows[0]["content"]


async def test_the_injected_block_is_not_replayed_in_the_next_request(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    await remember(plugin, VEGETARIAN)
    bot = RecordingBot()
    await bot.receive(asking("小明吃素吗？"))
    first_request_user = last_user_content(plugin)

    await bot.receive(asking("今天天气怎么样"))

    earlier_user = plugin.llm.last_messages()[1]
    assert earlier_user["role"] == "user"
    footer = f"\n{prompts.MEMORY_INJECTION_FOOTER}\n"
    assert earlier_user["content"] == first_request_user.partition(footer)[2]
    assert prompts.MEMORY_INJECTION_HEADER not in earlier_user["content"]


async def test_an_unrelated_message_gets_no_block(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    await remember(plugin, VEGETARIAN)
    bot = RecordingBot()

    await bot.receive(asking("今天天气怎么样"))

    assert prompts.MEMORY_INJECTION_HEADER not in last_user_content(plugin)


@pytest.mark.parametrize(
    ("message", "stray", "about_it"),
    [
        # "小名叫" is cut 小 / 名叫: the cat note shares the stray 小 of its 小明.
        ("我女儿小名叫什么来着？", "小明(2001)说：我家猫叫豆包。", "小明(2001)的女儿小名叫安安"),
        ("Bob的生日是哪天？", "Bob(2002)最喜欢吃草莓蛋糕", "Bob(2002)的生日是五月二日"),
    ],
)
async def test_without_vectors_a_note_sharing_a_stray_word_stays_out(
    plugin, message: str, stray: str, about_it: str
) -> None:
    # A 1.5B model answered the daughter question with the cat's name: a note a small model
    # reads above the question is one it may copy.
    await remember(plugin, stray)
    related = await remember(plugin, about_it)
    bot = RecordingBot()

    await bot.receive(asking(message))

    assert [line.split()[0] for line in memory_lines(last_user_content(plugin))] == [f"#{related}"]


async def sent_with_notes(plugin, notes: tuple[str, ...], question: str) -> str:
    """What the model is sent for `question`, asked once `notes` are the chat's."""
    for note in notes:
        await remember(plugin, note)
    await RecordingBot().receive(asking(question))
    return last_user_content(plugin)


async def test_notes_sharing_only_a_character_of_a_name_are_not_injected(plugin) -> None:
    # A 1.5B model's run: "小名叫" is cut 小 / 名叫, and a name jieba does not know is
    # indexed as its characters beside their bigram; every note on 小明 held that 小.
    # (Notes name people with a QQ number as the writers put it: five digits or more.)
    from nonebot_plugin_aimemory import prompts

    notes = (
        "小明(20001)说：我家猫叫豆包。",
        "小明(20001)说：我老家是景德镇的。",
        "阿强(20002)对菠萝过敏，一点都不能吃",
        "Lily(20003)在北辰电气上班",
        "Lily(20003)在学尤克里里",
    )
    sent = await sent_with_notes(plugin, notes, "我女儿小名叫什么来着？")

    assert prompts.MEMORY_INJECTION_HEADER not in sent


async def test_a_verb_of_one_character_outside_names_is_a_shared_word(plugin) -> None:
    # The same run: "我在学什么乐器来着？" shares only 学 with the instrument's note.
    from nonebot_plugin_aimemory import prompts

    notes = (
        "小明(20001)说：我家猫叫豆包。",
        "阿强(20002)对菠萝过敏，一点都不能吃",
        "Lily(20003)说：我在学尤克里里，已经学了两年",
        "阿强(20002)说：“每周六上午我都去学击剑，教练说我进步挺快”",
    )
    sent = await sent_with_notes(plugin, notes, "我在学什么乐器来着？")

    assert prompts.MEMORY_INJECTION_HEADER in sent
    assert "尤克里里" in sent
    assert "豆包" not in sent
    assert "菠萝" not in sent
    assert "击剑" not in sent  # 学 is a smaller part of a longer note there


async def test_memories_of_another_scope_are_never_injected(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    await remember(plugin, VEGETARIAN, scope="g:702")
    bot = RecordingBot()

    await bot.receive(asking("小明吃素吗？"))

    assert prompts.MEMORY_INJECTION_HEADER not in last_user_content(plugin)
    assert VEGETARIAN not in last_user_content(plugin)


async def test_auto_inject_off_sends_no_block(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    await plugin.restart(aimemory_memory_auto_inject=False)
    await remember(plugin, VEGETARIAN)
    bot = RecordingBot()

    await bot.receive(asking("小明吃素吗？"))

    assert prompts.MEMORY_INJECTION_HEADER not in last_user_content(plugin)


async def test_at_most_top_k_memories_are_injected(plugin) -> None:
    await plugin.restart(aimemory_memory_inject_topk=2)
    for dish in ("火锅", "烧烤", "寿司", "披萨", "饺子"):
        await remember(plugin, f"小明(2001)的最爱是{dish}")
    bot = RecordingBot()

    await bot.receive(asking("小明的最爱是什么"))

    assert len(memory_lines(last_user_content(plugin))) == 2


async def test_injected_block_stays_within_about_1500_characters(plugin) -> None:
    for n in ("一", "二", "三"):
        await remember(plugin, f"小明(2001)的第{n}个旅行计划：" + "去海边看日出，" * 85)
    bot = RecordingBot()

    await bot.receive(asking("小明的旅行计划是什么"))

    content = last_user_content(plugin)
    assert block_chars(content) <= 1500
    assert len(memory_lines(content)) == 2  # the third would not fit


async def test_an_entry_that_does_not_fit_is_skipped_and_the_next_ones_still_go_in(plugin) -> None:
    # Ranked: the short plan first, then the long plan (does not fit), then the budget
    # note, which must not be blocked by the long plan.
    first = await remember(plugin, "小明(2001)的旅行计划：暑假去青岛，旅行预算三千")
    await remember(plugin, "小明(2001)的旅行计划：" + "去海边看日出，" * 200)
    third = await remember(plugin, "小明(2001)的预算是三千元")
    bot = RecordingBot()

    await bot.receive(asking("小明的旅行计划和旅行预算"))

    lines = memory_lines(last_user_content(plugin))
    assert [line.split()[0] for line in lines] == [f"#{first}", f"#{third}"]


async def test_an_over_budget_best_match_is_injected_cut_rather_than_dropped(plugin) -> None:
    long_plan = "小明(2001)的旅行计划：" + "去海边看日出，" * 300
    long_id = await remember(plugin, long_plan)
    short_id = await remember(plugin, "小明(2001)去海边看日出要带相机")
    bot = RecordingBot()

    await bot.receive(asking("小明(2001)的旅行计划：去海边看日出"))

    content = last_user_content(plugin)
    best, *rest = memory_lines(content)
    assert block_chars(content) <= 1500
    assert best.startswith(f"#{long_id} 「小明(2001)的旅行计划：去海边看日出，")
    assert best.endswith("…」")  # the content is cut, and the quote still closes
    assert [line.split()[0] for line in rest] == [f"#{short_id}"]


# ------------------------------------------------ the relevance floor, with embeddings on

OTHERS = [
    "群里每周五晚上八点开例会",
    "小红(2002)住在杭州西湖边",
    "Bob(2004) plays basketball every weekend",
]


async def with_embeddings(plugin):
    return await plugin.restart(
        aimemory_embedding_model="fake-embed", aimemory_embedding_api_base=plugin.llm.base_url
    )


async def remember_all(plugin, contents) -> dict[str, str]:
    return {content: await remember(plugin, content) for content in contents}


async def test_with_embeddings_an_unrelated_message_gets_no_block(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    await with_embeddings(plugin)
    await remember_all(plugin, [VEGETARIAN, *OTHERS])
    bot = RecordingBot()

    await bot.receive(asking("今天天气怎么样"))

    assert prompts.MEMORY_INJECTION_HEADER not in last_user_content(plugin)


async def test_with_embeddings_a_related_message_gets_the_right_memory_first(plugin) -> None:
    await with_embeddings(plugin)
    ids = await remember_all(plugin, [VEGETARIAN, *OTHERS])
    bot = RecordingBot()

    await bot.receive(asking("小明吃素吗？"))

    lines = memory_lines(last_user_content(plugin))
    assert lines[0] == f"#{ids[VEGETARIAN]} 「{VEGETARIAN}」"


async def test_with_embeddings_a_paraphrase_sharing_no_word_is_injected(plugin) -> None:
    await with_embeddings(plugin)
    ids = await remember_all(plugin, [VEGETARIAN, *OTHERS])
    bot = RecordingBot()

    # No search term in common with the basketball memory, only character bigrams, which
    # is what the fake embedding model measures.
    await bot.receive(asking("basketballer saturdays?"))

    lines = memory_lines(last_user_content(plugin))
    basketball = OTHERS[2]
    assert lines == [f"#{ids[basketball]} 「{basketball}」"]


async def test_with_embeddings_a_name_alone_in_a_long_message_injects_nothing(plugin) -> None:
    from nonebot_plugin_aimemory import prompts

    await with_embeddings(plugin)
    await remember_all(plugin, [VEGETARIAN, *OTHERS])
    bot = RecordingBot()

    # Shares only the name with the vegetarian memory: a small part of what is asked, and
    # the vectors do not see the two as related.
    await bot.receive(asking("小明明天的数学作业写完了没有，老师下午要检查，还要交实验报告"))

    assert prompts.MEMORY_INJECTION_HEADER not in last_user_content(plugin)
