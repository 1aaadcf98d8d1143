"""The model's `memory_search` lends the best memories' words to its query (memory/feedback.py):
a memory that answers through what another one says of the question's subject is found,
while a person's `~记忆 搜索` and the memories injected on their own find only what holds
the question's words."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import command, model_calls_one
from tests.quoted_blocks import memory_hits

GROUP = 731
SCOPE = f"g:{GROUP}"
# The question names the runner and the sign-up; only the first memory says what was signed
# up for, and only through that word ("马拉松") is the second, the answer, found.
SIGNUP = "小明报名了周六的马拉松"
START = "马拉松的起点在人民公园东门"
OTHERS = ("群里每周五晚上八点开例会", "阿强养了一只橘猫", "老王对花生过敏，聚餐要避开")
QUESTION = "小明报名的那个活动从哪儿出发？"


async def remember_all(plugin) -> None:
    for content in (SIGNUP, START, *OTHERS):
        outcome = await plugin.runtime.memory.service.save(SCOPE, content)
        assert outcome.status == "saved"


async def model_searches(plugin, query: str) -> str:
    event = group_message("查一下", group_id=GROUP, to_me=True)
    return await model_calls_one(plugin, RecordingBot(), event, "memory_search", {"query": query})


async def test_the_models_search_finds_the_answer_through_the_best_memorys_words(plugin) -> None:
    await remember_all(plugin)

    lines = memory_hits(await model_searches(plugin, QUESTION))

    # The question's own words weigh more than a borrowed one: the memory holding them first.
    assert lines[0].endswith(f"「{SIGNUP}」")
    assert lines[1].endswith(f"「{START}」")
    assert not any(other in line for line in lines for other in OTHERS)


async def test_a_persons_search_finds_only_what_holds_their_words(plugin) -> None:
    await remember_all(plugin)

    reply = await command(RecordingBot(), group_message(f"~记忆 搜索 {QUESTION}", group_id=GROUP))

    assert SIGNUP in reply
    assert START not in reply


async def test_a_question_that_finds_nothing_borrows_nothing(plugin) -> None:
    await remember_all(plugin)

    result = await model_searches(plugin, "量子物理怎么学")

    assert result == "没有找到相关记忆。"
