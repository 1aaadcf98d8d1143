"""A fact the reviewer draws from a member's own words about themselves in a group is also
kept in that member's personal memories, privately: their private chat with the bot knows
it, no other group does, and a fact about someone else stays the group's (issue #36)."""

from __future__ import annotations

from tests.chatlog.helpers import (
    command,
    live_memories,
    logged,
    ops,
    said,
    said_privately,
    tick_and_wait,
)
from tests.fakes.bots import RecordingBot

XIAOMING = 20001
XIAOHONG = 20002
TRIP = f"小明({XIAOMING})下周三去威海出差"


async def reviewed(plugin, reviewer, line: str, fact: str, *, user_id: int, card: str) -> None:
    """`line`, said to the bot in the group by `user_id`, reviewed into `fact`."""
    await RecordingBot().receive(said(line, to_me=True, user_id=user_id, card=card))
    await plugin.runtime.chat_log.flush()
    member_row = (await logged(plugin))[0]
    reviewer.answer(ops({"op": "create", "content": fact, "evidence": [member_row.id]}))
    await tick_and_wait(plugin)


async def test_a_members_fact_about_themselves_reaches_their_private_chat(plugin, reviewer) -> None:
    await reviewed(plugin, reviewer, "我下周三去威海出差", TRIP, user_id=XIAOMING, card="小明")

    assert [r.content for r in await live_memories(plugin)] == [TRIP]
    (copy,) = await live_memories(plugin, f"u:{XIAOMING}")
    assert (copy.content, copy.user_id, copy.private) == (TRIP, str(XIAOMING), True)
    assert copy.provenance.said_by is not None
    assert copy.provenance.said_by.user_id == str(XIAOMING)
    # asked in private, the member's own fact goes before the question
    await RecordingBot().receive(said_privately("我下周三去哪出差来着？", user_id=XIAOMING))
    assert "威海" in str(plugin.llm.chat_requests[-1]["messages"][-1]["content"])


async def test_the_copy_stays_out_of_another_group(plugin, reviewer) -> None:
    await reviewed(plugin, reviewer, "我下周三去威海出差", TRIP, user_id=XIAOMING, card="小明")

    asked = said("我下周三去哪出差来着？", to_me=True, user_id=XIAOMING, card="小明", group_id=222)
    await RecordingBot().receive(asked)
    assert "威海" not in str(plugin.llm.chat_requests[-1]["messages"])


async def test_a_fact_about_someone_else_stays_the_groups(plugin, reviewer) -> None:
    # 小红 tells the group about 小明: it is hers to tell the group, not his to carry
    fact = f"小明({XIAOMING})下周三去威海出差"
    await reviewed(plugin, reviewer, "小明下周三去威海出差", fact, user_id=XIAOHONG, card="小红")

    assert [r.content for r in await live_memories(plugin)] == [fact]
    assert await live_memories(plugin, f"u:{XIAOMING}") == []
    assert await live_memories(plugin, f"u:{XIAOHONG}") == []


async def test_no_copy_without_personal_memory(plugin, reviewer) -> None:
    await plugin.restart(aimemory_personal_memory=False)
    plugin.llm.responder = reviewer

    await reviewed(plugin, reviewer, "我下周三去威海出差", TRIP, user_id=XIAOMING, card="小明")

    assert [r.content for r in await live_memories(plugin)] == [TRIP]
    assert await live_memories(plugin, f"u:{XIAOMING}") == []


async def test_nothing_is_copied_from_a_private_chat(plugin, reviewer) -> None:
    await RecordingBot().receive(said_privately("我下周三去威海出差", user_id=XIAOMING))
    await plugin.runtime.chat_log.flush()
    key = f"f:{XIAOMING}"
    member_row = (await logged(plugin, key))[0]
    reviewer.answer(ops({"op": "create", "content": TRIP, "evidence": [member_row.id]}))
    await tick_and_wait(plugin)

    assert [r.content for r in await live_memories(plugin, key)] == [TRIP]
    assert await live_memories(plugin, f"u:{XIAOMING}") == []


async def rewritten(plugin, reviewer, line: str, fact: str, *, user_id: int, card: str) -> None:
    """`line`, said to the bot in the group by `user_id`, reviewed into an update of the
    group's one memory to `fact`."""
    (group_memory,) = await live_memories(plugin)
    await RecordingBot().receive(said(line, to_me=True, user_id=user_id, card=card))
    await plugin.runtime.chat_log.flush()
    row = [row for row in await logged(plugin) if row.role == "user"][-1]
    change = {"op": "update", "id": group_memory.id, "content": fact, "evidence": [row.id]}
    reviewer.answer(ops(change))
    await command(RecordingBot(), "~记忆 立即生成")  # the scheduler waits its interval


async def test_a_correction_of_the_groups_memory_reaches_the_private_copy(plugin, reviewer) -> None:
    # given a member's fact, copied to their private memories
    await reviewed(plugin, reviewer, "我下周三去威海出差", TRIP, user_id=XIAOMING, card="小明")
    # when the reviewer corrects the group's memory from what he says next
    moved = f"小明({XIAOMING})下周四去威海出差"
    await rewritten(plugin, reviewer, "改了，下周四才去威海", moved, user_id=XIAOMING, card="小明")

    # then his private chat knows the correction, not the old plan
    assert [r.content for r in await live_memories(plugin)] == [moved]
    (copy,) = await live_memories(plugin, f"u:{XIAOMING}")
    assert (copy.content, copy.private) == (moved, True)


async def test_a_copy_the_member_changed_is_left_as_they_wrote_it(plugin, reviewer) -> None:
    await reviewed(plugin, reviewer, "我下周三去威海出差", TRIP, user_id=XIAOMING, card="小明")
    (copy,) = await live_memories(plugin, f"u:{XIAOMING}")
    mine = f"小明({XIAOMING})下周三去威海出差，住海边"
    await plugin.runtime.memory.service.update(f"u:{XIAOMING}", copy.id, content=mine)

    moved = f"小明({XIAOMING})下周四去威海出差"
    await rewritten(plugin, reviewer, "改了，下周四才去威海", moved, user_id=XIAOMING, card="小明")

    assert [r.content for r in await live_memories(plugin, f"u:{XIAOMING}")] == [mine]
