"""A fact a person deleted stays deleted when it comes back reworded: a save or update whose
token set is close to a tombstoned memory's (Dice >= 0.8, about the same person) is refused
like the exact text, from the model's tools, the reviewer and the extractor alike."""

from __future__ import annotations

import json

import pytest

from tests.chatlog.helpers import FakeReviewer, ops, talk
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import command, model_calls_one, stored
from tests.memory.test_extraction import ExtractingLLM, start, talk_until_compressed

GROUP = 111  # the group of the chat-log helpers the reviewer test talks through
SCOPE = f"g:{GROUP}"
DELETED = "住在阳光小区3号楼"
REWORDED = "住阳光小区的3号楼"
DIFFERENT = "阳光小区3号楼的电梯坏了"
TOMBSTONED = "未保存：这条内容已被用户手动删除，不能再次保存。"
UPDATE_TOMBSTONED = "未更新：这个内容已被用户手动删除过，不能再保存。"


def dice_of(one: str, other: str) -> float:
    """The similarity the tombstone rule measures (tokens of the normalised forms)."""
    from nonebot_plugin_aimemory.memory.rules import normalize
    from nonebot_plugin_aimemory.text import segmenter

    return segmenter.dice(
        segmenter.token_set(normalize(one)), segmenter.token_set(normalize(other))
    )


async def person_deletes(
    plugin, bot: RecordingBot, content: str, *, user_id: str | None = None, group_id: int = GROUP
) -> str:
    """The fact is remembered, then a group admin deletes it with `~记忆 删除`."""
    outcome = await plugin.runtime.memory.service.save(f"g:{group_id}", content, user_id=user_id)
    memory_id = outcome.memory.id
    event = group_message(f"~记忆 删除 {memory_id}", group_id=group_id, role="admin")
    assert (await command(bot, event)).startswith(f"已删除记忆 #{memory_id}")
    return memory_id


async def model_saves(plugin, bot: RecordingBot, content: str, **arguments: str) -> str:
    event = group_message("记一下", group_id=GROUP, to_me=True)
    arguments = {"content": content, **arguments}
    return await model_calls_one(plugin, bot, event, "memory_save", arguments)


async def live_contents(plugin, scope: str = SCOPE) -> list[str]:
    return [r.content for r in await stored(plugin, scope)]


def test_the_issues_rewording_is_close_enough_and_the_other_fact_is_not() -> None:
    assert dice_of(DELETED, REWORDED) >= 0.8
    assert dice_of(DELETED, DIFFERENT) < 0.8


# ---------------------------------------------------------------- refused everywhere


async def test_the_model_cannot_save_a_deleted_fact_reworded(plugin) -> None:
    bot = RecordingBot()
    await person_deletes(plugin, bot, DELETED)

    result = await model_saves(plugin, bot, REWORDED)

    assert result == TOMBSTONED
    assert await live_contents(plugin) == []


async def test_the_reworded_fact_is_refused_after_a_restart(plugin) -> None:
    bot = RecordingBot()
    await person_deletes(plugin, bot, DELETED)
    await plugin.restart()  # the tombstone's tokens now come from the database

    result = await model_saves(plugin, bot, REWORDED)

    assert result == TOMBSTONED


async def test_the_model_cannot_update_a_memory_into_a_deleted_fact_reworded(plugin) -> None:
    bot = RecordingBot()
    kept = (await plugin.runtime.memory.service.save(SCOPE, "小明(10001)喜欢吃辣")).memory
    await person_deletes(plugin, bot, DELETED)
    event = group_message("改一下", group_id=GROUP, to_me=True)

    result = await model_calls_one(
        plugin, bot, event, "memory_update", {"id": kept.id, "content": REWORDED}
    )

    assert result == UPDATE_TOMBSTONED
    assert await live_contents(plugin) == ["小明(10001)喜欢吃辣"]


async def test_the_reviewer_cannot_recreate_a_deleted_fact_reworded(plugin) -> None:
    reviewer = FakeReviewer()
    plugin.llm.responder = reviewer
    bot = RecordingBot()
    await talk(plugin, bot, "我住阳光小区的3号楼")
    await person_deletes(plugin, bot, DELETED)
    reviewer.answer(ops({"op": "create", "content": REWORDED}))

    reply = await command(bot, group_message("~记忆 立即生成", group_id=GROUP, role="admin"))

    assert len(reviewer.requests) == 1
    assert "没有需要记住的内容" in reply
    assert await live_contents(plugin) == []


async def test_the_extractor_cannot_save_a_deleted_fact_reworded(plugin) -> None:
    group_id = 1301

    def facts(transcript: str) -> str:
        contents = [REWORDED, "大家投票决定周末去爬山还是看电影"]
        return json.dumps({"facts": [{"content": c} for c in contents]}, ensure_ascii=False)

    llm = ExtractingLLM(facts)
    await start(plugin, llm)
    await person_deletes(plugin, RecordingBot(), DELETED, group_id=group_id)
    # Said in the chat (first, so folded), so that the facts are what a line states.
    said = "我住阳光小区的3号楼。大家投票决定周末去爬山还是看电影。"
    await RecordingBot().receive(group_message(said, to_me=True, group_id=group_id))

    await talk_until_compressed(plugin, group_id)
    await plugin.runtime.memory.extractor.drain()

    assert len(llm.transcripts) == 1
    assert await live_contents(plugin, f"g:{group_id}") == ["大家投票决定周末去爬山还是看电影"]


# ---------------------------------------------------------------- still saved


async def test_a_different_fact_on_the_same_topic_is_still_saved(plugin) -> None:
    bot = RecordingBot()
    await person_deletes(plugin, bot, DELETED)

    result = await model_saves(plugin, bot, DIFFERENT)

    assert result.startswith("已保存记忆 #")
    assert await live_contents(plugin) == [DIFFERENT]


async def test_the_reworded_fact_about_another_qq_number_is_still_saved(plugin) -> None:
    bot = RecordingBot()
    await person_deletes(plugin, bot, DELETED, user_id="10001")

    result = await model_saves(plugin, bot, REWORDED, user_id="10002")

    assert result.startswith("已保存记忆 #")
    (saved,) = await stored(plugin, SCOPE)
    assert (saved.content, saved.user_id) == (REWORDED, "10002")


@pytest.mark.parametrize(
    ("deleted_user", "saved_user"),
    [("10001", "10001"), ("10001", None), (None, "10002")],
    ids=["same-person", "saved-without-person", "deleted-without-person"],
)
async def test_the_reworded_fact_about_the_same_or_an_unnamed_person_is_refused(
    plugin, deleted_user: str | None, saved_user: str | None
) -> None:
    bot = RecordingBot()
    await person_deletes(plugin, bot, DELETED, user_id=deleted_user)

    arguments = {"user_id": saved_user} if saved_user else {}
    result = await model_saves(plugin, bot, REWORDED, **arguments)

    assert result == TOMBSTONED


async def test_a_qq_number_named_in_the_text_tells_the_people_apart(plugin) -> None:
    bot = RecordingBot()
    await person_deletes(plugin, bot, "小明(10001)住在阳光小区3号楼")
    same_person = "小明（10001）住阳光小区的3号楼"
    other_person = "小明(10002)住阳光小区的3号楼"
    assert dice_of("小明(10001)住在阳光小区3号楼", other_person) >= 0.8

    refused = await model_saves(plugin, bot, same_person)
    saved = await model_saves(plugin, bot, other_person)

    assert refused == TOMBSTONED
    assert saved.startswith("已保存记忆 #")
    assert await live_contents(plugin) == [other_person]


async def test_the_qq_number_in_the_text_and_in_user_id_is_the_same_person(plugin) -> None:
    bot = RecordingBot()
    await person_deletes(plugin, bot, "小明(10001)住在阳光小区3号楼")

    result = await model_saves(plugin, bot, REWORDED, user_id="10001")

    assert result == TOMBSTONED


async def test_a_corrected_number_is_a_new_fact(plugin) -> None:
    bot = RecordingBot()
    await person_deletes(plugin, bot, "小明的生日是3月5日")
    assert dice_of("小明的生日是3月5日", "小明的生日是3月6日") >= 0.8

    result = await model_saves(plugin, bot, "小明的生日是3月6日")

    assert result.startswith("已保存记忆 #")


async def test_after_a_restore_the_reworded_fact_may_be_saved(plugin) -> None:
    bot = RecordingBot()
    memory_id = await person_deletes(plugin, bot, DELETED)
    assert await model_saves(plugin, bot, REWORDED) == TOMBSTONED

    restored = await command(
        bot, group_message(f"~记忆 恢复 {memory_id}", group_id=GROUP, role="admin")
    )
    result = await model_saves(plugin, bot, REWORDED)

    assert restored.startswith(f"已恢复记忆 #{memory_id}")
    assert result.startswith("已保存记忆 #")
    assert sorted(await live_contents(plugin)) == sorted([DELETED, REWORDED])
