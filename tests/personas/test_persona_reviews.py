"""Each persona reviews the shared chat log on its own: the review a turn asks for is the
current persona's, written into its memories with its prompt; the default persona's review
state and memories are untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chatlog.helpers import GROUP, FakeReviewer, command, live_memories, ops, talk
from tests.fakes.bots import RecordingBot

CAT_PROMPT = "你是一只猫娘，说话句尾带“喵”。"
CAT_SCOPE = f"{GROUP}#猫娘"


@pytest.fixture
def reviewer(plugin) -> FakeReviewer:
    """Review requests get scripted answers, chat gets 好的."""
    fake = FakeReviewer()
    plugin.llm.responder = fake
    return fake


async def test_a_review_under_a_persona_writes_that_persona_memories_with_its_prompt(
    plugin, reviewer
) -> None:
    folder = Path(plugin.db_path).parent / "personas"
    (folder / "猫娘.md").write_text(CAT_PROMPT, encoding="utf-8")
    bot = RecordingBot()
    await command(bot, "~人设 切换 猫娘")
    await talk(plugin, bot, "我养了一只猫，叫咪咪")
    reviewer.answer(ops({"op": "create", "content": "小明(2001)养了一只猫叫咪咪"}))

    reply = await command(bot, "~记忆 立即生成")

    assert "新增 1 条" in reply
    review_request = reviewer.requests[-1]["messages"]
    assert CAT_PROMPT in review_request[0]["content"]
    assert "我养了一只猫，叫咪咪" in reviewer.shown
    assert [m.content for m in await live_memories(plugin, CAT_SCOPE)] == [
        "小明(2001)养了一只猫叫咪咪"
    ]
    assert await live_memories(plugin, GROUP) == []


async def test_a_turn_under_a_persona_marks_that_persona_for_review(plugin, reviewer) -> None:
    folder = Path(plugin.db_path).parent / "personas"
    (folder / "猫娘.md").write_text(CAT_PROMPT, encoding="utf-8")
    bot = RecordingBot()
    await command(bot, "~人设 切换 猫娘")
    await talk(plugin, bot, "今天好热")
    await plugin.runtime.chat_log.writer.flush()

    cat = await plugin.runtime.chat_log.writer.reviews.get(CAT_SCOPE)
    default = await plugin.runtime.chat_log.writer.reviews.get(GROUP)

    assert cat.pending
    assert not default.pending
