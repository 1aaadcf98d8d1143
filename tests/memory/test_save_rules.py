"""What memory_save does with duplicates, near-duplicates, long content and a full scope,
as the model sees it in the tool result."""

from __future__ import annotations

import re

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import model_calls, model_calls_one, saved_id, stored, told_today

GROUP = 301
SCOPE = f"g:{GROUP}"


def asking(content: str = "记一下"):
    return group_message(content, group_id=GROUP, to_me=True)


async def save(plugin, bot: RecordingBot, content: str, **extra) -> str:
    return await model_calls_one(
        plugin, bot, asking(), "memory_save", {"content": content, **extra}
    )


@pytest.mark.parametrize(
    "variant",
    [
        "  Alice(2005)   喜欢\n Python 和 Go  ",
        "Ａｌｉｃｅ（２００５）　喜欢　Ｐｙｔｈｏｎ　和　Ｇｏ",
        "ALICE(2005) 喜欢 python 和 GO",
    ],
    ids=["whitespace", "full width", "case"],
)
async def test_same_content_in_another_form_is_not_saved_twice(plugin, variant) -> None:
    bot = RecordingBot()
    first_id = saved_id(await save(plugin, bot, "Alice(2005) 喜欢 Python 和 Go"))

    result = await save(plugin, bot, variant)

    assert result == f"相同内容的记忆已存在：#{first_id}，无需重复保存。"
    assert [r.id for r in await stored(plugin, SCOPE)] == [first_id]


async def test_saved_content_is_whitespace_folded(plugin) -> None:
    bot = RecordingBot()

    await save(plugin, bot, "  小明(2001)\n\n喜欢   吃辣  ")

    assert [r.content for r in await stored(plugin, SCOPE)] == ["小明(2001) 喜欢 吃辣"]


async def test_a_members_request_to_keep_is_saved_as_what_it_asks_to_keep(plugin) -> None:
    # A real 1.5B model saved the member's message word for word, and the guard check then
    # read the stored "记住：…" as an order to the bot.
    bot = RecordingBot()

    await save(plugin, bot, "记住：我在学尤克里里，已经学了两年。")

    assert [r.content for r in await stored(plugin, SCOPE)] == ["我在学尤克里里，已经学了两年。"]


async def test_near_duplicate_is_saved_with_a_hint_to_merge(plugin) -> None:
    bot = RecordingBot()
    first_id = saved_id(await save(plugin, bot, "小明(2001)喜欢吃四川火锅，尤其是麻辣锅底"))

    result = await save(plugin, bot, "小明(2001)喜欢吃重庆火锅，尤其是麻辣锅底")

    saved_id(result)
    hint = result.splitlines()[-1]
    assert hint.startswith(f"发现相似的记忆：#{first_id} 小明(2001)喜欢吃四川火锅")
    assert "memory_update" in hint
    assert "memory_forget" in hint
    assert len(await stored(plugin, SCOPE)) == 2


async def test_the_same_fact_about_someone_else_gets_no_hint_to_merge(plugin) -> None:
    bot = RecordingBot()
    await save(plugin, bot, "小明(123456)喜欢吃四川火锅，尤其是麻辣锅底")

    result = await save(plugin, bot, "阿强(654321)喜欢吃四川火锅，尤其是麻辣锅底")

    assert "相似" not in result
    assert len(await stored(plugin, SCOPE)) == 2


async def test_an_unrelated_fact_gets_no_similarity_hint(plugin) -> None:
    bot = RecordingBot()
    await save(plugin, bot, "小明(2001)吃素，不吃任何肉类")

    result = await save(plugin, bot, "小明(2001)喜欢打羽毛球")

    assert "相似" not in result
    assert len(result.splitlines()) == 1


async def test_content_over_2000_characters_is_truncated_and_the_result_says_so(plugin) -> None:
    bot = RecordingBot()
    diary = "小明(2001)的日记：" + "今天天气很好。" * 400

    result = await save(plugin, bot, diary)

    (record,) = await stored(plugin, SCOPE)
    assert record.content == diary[:2000]
    assert result.splitlines()[-1] == "注意：内容超过 2000 字，已截断保存。"


async def test_content_of_exactly_2000_characters_is_kept_whole(plugin) -> None:
    bot = RecordingBot()
    diary = ("小明(2001)的日记：" + "今天天气很好。" * 400)[:2000]

    result = await save(plugin, bot, diary)

    (record,) = await stored(plugin, SCOPE)
    assert record.content == diary
    assert "截断" not in result


async def test_saving_into_a_full_scope_asks_to_merge_or_forget_first(plugin) -> None:
    await plugin.restart(aimemory_memory_max_entries=3)
    bot = RecordingBot()
    facts = ["小明(2001)吃素", "小红(2002)生日是三月十二日", "阿强(2003)养猫", "周五晚上开例会"]

    results = await model_calls(
        plugin, bot, asking(), *(("memory_save", {"content": fact}) for fact in facts)
    )

    assert results[3] == (
        "未保存：本会话的记忆已满（3 条）。请先用 memory_update 合并相近的记忆，"
        "或用 memory_forget 删除过时的记忆，再保存。"
    )
    assert [r.content for r in await stored(plugin, SCOPE)] == facts[:3]


async def test_forgetting_one_makes_room_in_a_full_scope(plugin) -> None:
    await plugin.restart(aimemory_memory_max_entries=1)
    bot = RecordingBot()
    old_id = saved_id(await save(plugin, bot, "例会在周四"))

    forget, save_again = await model_calls(
        plugin,
        bot,
        asking(),
        ("memory_forget", {"id": old_id}),
        ("memory_save", {"content": "例会改到周五"}),
    )

    assert forget == f"已删除记忆 #{old_id}。"
    saved_id(save_again)
    assert [r.content for r in await stored(plugin, SCOPE)] == ["例会改到周五"]


async def test_tags_and_user_id_are_stored_with_the_memory(plugin) -> None:
    bot = RecordingBot()

    result = await save(plugin, bot, "小明(2001)吃素", tags=["饮食", "习惯"], user_id="2001")

    (record,) = await stored(plugin, SCOPE)
    assert (record.tags, record.user_id) == (["饮食", "习惯"], "2001")
    line = f"#{record.id} 小明(2001)吃素 [标签：饮食、习惯] (关于 2001)"
    assert result == f"已保存记忆 {line}{told_today(plugin, '小明', 2001)}"


async def test_memory_ids_are_short_and_easy_to_type(plugin) -> None:
    bot = RecordingBot()

    memory_id = saved_id(await save(plugin, bot, "小明(2001)吃素"))

    assert 2 <= len(memory_id) <= 6
    assert memory_id.isalnum()
    assert memory_id == memory_id.lower()


async def test_timestamps_are_fixed_width_utc_text_in_time_order(plugin) -> None:
    bot = RecordingBot()
    for fact in ("小明(2001)吃素", "小红(2002)生日是三月十二日", "阿强(2003)养猫"):
        await save(plugin, bot, fact)

    records = await stored(plugin, SCOPE)

    stamps = [r.created_at for r in records]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", s) for s in stamps)
    assert [r.content for r in records] == [
        "小明(2001)吃素",
        "小红(2002)生日是三月十二日",
        "阿强(2003)养猫",
    ]


@pytest.mark.parametrize(
    "question",
    [
        "学吉他难吗？",
        "手机电池怎么用更耐久?",
        "Where does Lily work?",
        "“周末去哪玩？”",
        "هل هذا صحيح؟",
    ],
)
async def test_a_question_is_not_saved_and_the_model_is_told_why(plugin, question) -> None:
    from nonebot_plugin_aimemory import texts

    # given a small model that saves the member's question itself, as one was seen to do
    result = await save(plugin, RecordingBot(), question)
    # then nothing is stored, and the result says to write the fact as a statement
    assert texts.QUESTION_NOT_SAVED in result
    assert await stored(plugin, SCOPE) == []


def test_statements_are_not_taken_for_questions() -> None:
    from nonebot_plugin_aimemory.text import is_question

    assert not is_question("阿强(20002)问过学吉他难不难，大家说不难。")
    assert not is_question("Lily works at 星河科技 (asked on Friday)")
    # Without the mark, a sentence-final 吗/么 still asks; 这么/那么 do not.
    assert is_question("记住了吗")
    assert is_question("明天下雨吗。")
    assert is_question("你叫什么")
    assert not is_question("小明说他从没这么开心过，真的就是那么")
    assert not is_question("阿强(20002)喜欢吃烤鸭")


BAND = "小明(20001)说：“最近一直在听新裤子的歌，下个月还要去看他们的演出，我最喜欢这个乐队了”"
BAND_PART = "小明(20001)说：“我最喜欢这个乐队了”"


async def test_a_background_note_quoting_part_of_kept_words_adds_nothing(memory) -> None:
    # the real small model's reviewer re-saved a part of what the extraction had kept
    assert (await memory.save(SCOPE, BAND, source="extract")).status == "saved"

    outcome = await memory.save(SCOPE, BAND_PART, source="review")

    assert outcome.status == "duplicate"
    assert outcome.memory is not None
    assert outcome.memory.content == BAND


async def test_part_of_another_members_words_or_a_members_own_save_is_kept(memory) -> None:
    assert (await memory.save(SCOPE, BAND, source="extract")).status == "saved"

    other = await memory.save(SCOPE, "阿强(20002)说：“我最喜欢这个乐队了”", source="review")
    own = await memory.save(SCOPE, BAND_PART, source="tool")

    assert (other.status, own.status) == ("saved", "saved")


async def test_a_background_note_quoting_more_retires_the_part_saved_before(memory) -> None:
    # in the real run the reviewer's part came first, the extraction's whole words after
    assert (await memory.save(SCOPE, BAND_PART, source="review")).status == "saved"

    outcome = await memory.save(SCOPE, BAND, source="extract")

    assert outcome.status == "saved"
    assert [r.content for r in await memory.list(SCOPE)] == [BAND]


async def test_a_part_a_member_had_saved_stays_beside_more_of_their_words(memory) -> None:
    assert (await memory.save(SCOPE, BAND_PART, source="tool")).status == "saved"

    assert (await memory.save(SCOPE, BAND, source="extract")).status == "saved"

    assert sorted(r.content for r in await memory.list(SCOPE)) == sorted([BAND, BAND_PART])
