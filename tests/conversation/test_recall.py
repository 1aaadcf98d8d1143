"""Recall (issue #36): the earlier chat lines that answer an addressed message go before it
for that turn, quoted with who said them and when, beside the memories, so that a model
that never calls `search_current_chat` still reads them. Only on evidence, only this
chat's lines, never the bot's own, never persisted."""

from __future__ import annotations

import re

from tests.chatlog.helpers import LINE_PATTERN, said
from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import text

GROUP_ID = 111  # said()'s default group
OTHER_GROUP_ID = 112
AQIANG = 2003
TRIP = "我下周三去杭州出差，周五回来"
QUESTION = "阿强下周三去哪里出差？"
AQIANG_TRIP_ANSWER = "好的，阿强下周三去杭州出差，周五回来"


def recall_opening() -> str:
    from nonebot_plugin_aimemory import prompts

    return prompts.CHAT_LOG_RECALL_OPENING


def footer() -> str:
    from nonebot_plugin_aimemory import prompts

    return prompts.MEMORY_INJECTION_FOOTER


def recalled_lines(content: str) -> list[str]:
    """The lines of the recall block in a user message (none without one)."""
    if recall_opening() not in content:
        return []
    after = content.split(recall_opening() + "\n", 1)[1]
    return after.split("\n" + footer(), 1)[0].split("\n")


async def ambient_chat(plugin, bot: RecordingBot) -> None:
    """阿强 tells the group about his trip without addressing the bot, among other lines."""
    await plugin.restart(aimemory_chat_log_ambient=True)
    await bot.receive(said("大家晚上好", user_id=2002, card="小红"))
    await bot.receive(said(TRIP, user_id=AQIANG, card="阿强"))
    await bot.receive(said("今天的晚饭好吃", user_id=2002, card="小红"))
    await plugin.runtime.chat_log.flush()  # written, as lines a while ago are


async def test_a_line_that_answers_the_question_goes_before_it_quoted(plugin) -> None:
    bot = RecordingBot()
    await ambient_chat(plugin, bot)

    await bot.receive(said(QUESTION, to_me=True))

    content = plugin.llm.last_messages()[-1]["content"]
    lines = recalled_lines(content)
    assert len(lines) == 1
    assert re.match(LINE_PATTERN, lines[0])
    assert lines[0].endswith(f"阿强({AQIANG})：{TRIP}")
    # The notes come first, then the line that closes them, then the question.
    assert content.index(recall_opening()) < content.index(footer()) < content.index(QUESTION)


async def test_the_recalled_lines_are_for_one_turn_only(plugin) -> None:
    bot = RecordingBot()
    await ambient_chat(plugin, bot)
    await bot.receive(said(QUESTION, to_me=True))

    await bot.receive(said("谢谢", to_me=True))

    messages = plugin.llm.last_messages()
    earlier = [m for m in messages[:-1] if m["role"] == "user"]
    assert any(QUESTION in str(m["content"]) for m in earlier)
    assert all(recall_opening() not in str(m["content"]) for m in messages)


async def test_a_line_that_only_shares_a_name_is_not_recalled(plugin) -> None:
    bot = RecordingBot()
    await ambient_chat(plugin, bot)

    # 阿强's line matches his name, and nothing else of the question.
    await bot.receive(said("阿强最喜欢吃什么水果？", to_me=True))

    assert recall_opening() not in plugin.llm.last_messages()[-1]["content"]


async def test_nothing_is_recalled_for_a_question_no_line_shares_a_word_with(plugin) -> None:
    bot = RecordingBot()
    await ambient_chat(plugin, bot)

    await bot.receive(said("帮我算一下 3 加 5 等于几", to_me=True))

    assert recall_opening() not in plugin.llm.last_messages()[-1]["content"]


async def test_another_chats_lines_are_never_recalled(plugin) -> None:
    bot = RecordingBot()
    await plugin.restart(aimemory_chat_log_ambient=True)
    await bot.receive(said(TRIP, group_id=OTHER_GROUP_ID, user_id=AQIANG, card="阿强"))
    await plugin.runtime.chat_log.flush()

    await bot.receive(said(QUESTION, to_me=True))

    assert TRIP not in str(plugin.llm.last_messages())


async def test_a_line_still_in_the_window_is_not_repeated_nor_the_bots_answer(plugin) -> None:
    bot = RecordingBot()
    plugin.llm.responder = lambda body: text(f"{AQIANG_TRIP_ANSWER}")
    await bot.receive(said(TRIP, user_id=AQIANG, card="阿强", to_me=True))

    await bot.receive(said(QUESTION, to_me=True))

    assert recall_opening() not in plugin.llm.last_messages()[-1]["content"]


async def test_a_line_gone_from_the_window_is_recalled(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bot = RecordingBot()
    plugin.llm.responder = lambda body: text(f"{AQIANG_TRIP_ANSWER}")
    await bot.receive(said(TRIP, user_id=AQIANG, card="阿强", to_me=True))
    await bot.receive(said("~对话 清空", role="admin"))
    assert bot.sent_texts[-1] == texts.CLEARED
    await plugin.runtime.chat_log.flush()

    await bot.receive(said(QUESTION, to_me=True))

    # His line, not the bot's answer that holds the same words.
    lines = recalled_lines(plugin.llm.last_messages()[-1]["content"])
    assert [line.split("] ", 1)[1] for line in lines] == [f"阿强({AQIANG})：{TRIP}"]


async def test_recall_can_be_turned_off(plugin) -> None:
    bot = RecordingBot()
    await ambient_chat(plugin, bot)
    await plugin.restart(aimemory_chat_log_recall_rows=0)

    await bot.receive(said(QUESTION, to_me=True))

    assert recall_opening() not in plugin.llm.last_messages()[-1]["content"]


async def test_a_broken_chat_log_costs_the_recall_not_the_answer(plugin, plugin_log) -> None:
    bot = RecordingBot()
    await ambient_chat(plugin, bot)

    async def broken(*args, **kwargs):
        raise OSError("disk I/O error")

    plugin.runtime.chat_log.writer.store.ranked_rows = broken
    await bot.receive(said(QUESTION, to_me=True))

    # The model was asked without the lines and its answer went out.
    assert bot.sent_texts[-1].endswith(QUESTION)
    assert recall_opening() not in plugin.llm.last_messages()[-1]["content"]
    assert "could not recall chat lines" in plugin_log.text


async def test_an_english_line_is_recalled_by_its_words_and_speaker(plugin) -> None:
    bot = RecordingBot()
    await plugin.restart(aimemory_chat_log_ambient=True)
    group = "I went to a LGBTQ support group yesterday, it was powerful"
    await bot.receive(said(group, user_id=2004, card="Caroline"))
    await bot.receive(said("Good morning! Long ago I loved going out", user_id=2005, card="Mel"))
    await plugin.runtime.chat_log.flush()

    await bot.receive(said("When did Caroline go to the LGBTQ support group?", to_me=True))

    lines = recalled_lines(plugin.llm.last_messages()[-1]["content"])
    assert [line.split("] ", 1)[1] for line in lines] == [f"Caroline(2004)：{group}"]


FAMILY_CHAT = [
    (2001, "小明", "大家晚上好"),
    (AQIANG, "阿强", "今天加班到九点，累死了"),
    (2001, "小明", "我女儿果果今天第一次自己系鞋带，给她买什么奖励好？"),
    (2005, "Lily", "周末有人一起去爬山吗"),
    (2005, "Lily", "记住，我对花生过敏，一点都不能吃。"),
    (2001, "小明", "明天要下雨，记得带伞"),
]


async def family_chat(plugin, bot: RecordingBot) -> None:
    """Members say things about themselves in passing, not to the bot."""
    await plugin.restart(aimemory_chat_log_ambient=True)
    for user_id, name, line in FAMILY_CHAT:
        await bot.receive(said(line, user_id=user_id, card=name))
    await plugin.runtime.chat_log.flush()


async def recalled_for(bot: RecordingBot, plugin, question: str, user_id: int, name: str):
    await bot.receive(said(question, user_id=user_id, card=name, to_me=True))
    return recalled_lines(plugin.llm.last_messages()[-1]["content"])


async def test_a_question_in_the_first_person_recalls_what_its_asker_said(plugin) -> None:
    bot = RecordingBot()
    await family_chat(plugin, bot)
    # "我" is the asker: the line that answers is the one they said, though it never says
    # "小名" (a question names what it asks for; the answer names the thing itself)
    lines = await recalled_for(bot, plugin, "我女儿小名叫什么来着？", 2001, "小明")
    assert [line.split("] ", 1)[1] for line in lines] == [
        "小明(2001)：我女儿果果今天第一次自己系鞋带，给她买什么奖励好？"
    ]
    # an English name whose normal form is not its beginning ("lily" -> "lili") counts
    lines = await recalled_for(bot, plugin, "我对什么食物过敏来着？", 2005, "Lily")
    assert [line.split("] ", 1)[1] for line in lines] == [
        "Lily(2005)：记住，我对花生过敏，一点都不能吃。"
    ]


async def test_the_same_question_from_another_member_does_not_get_their_line(plugin) -> None:
    bot = RecordingBot()
    await family_chat(plugin, bot)
    # 阿强's "我女儿" is not 小明's daughter, nor is 小明's allergy Lily's
    assert await recalled_for(bot, plugin, "我女儿小名叫什么来着？", AQIANG, "阿强") == []
    assert await recalled_for(bot, plugin, "我对什么食物过敏来着？", 2001, "小明") == []


async def recalled_after(plugin, bot: RecordingBot, lines: list[tuple[int, str, str]]) -> list[str]:
    """What 阿强's question about his trip recalls after `lines` were said in the group."""
    await plugin.restart(aimemory_chat_log_ambient=True)
    for user_id, name, line in lines:
        await bot.receive(said(line, user_id=user_id, card=name))
    await plugin.runtime.chat_log.flush()
    recalled = await recalled_for(bot, plugin, "我下周三去哪里出差来着？", AQIANG, "阿强")
    return [line.split("] ", 1)[1] for line in recalled]


async def test_the_line_holding_most_of_the_question_is_read_first(plugin) -> None:
    bot = RecordingBot()
    # a small model answers from the first line it reads: the asker's own trip goes
    # before another member's, though it was said later
    recalled = await recalled_after(
        plugin,
        bot,
        [(2002, "小红", "下周三我也去厦门出差，好烦"), (AQIANG, "阿强", TRIP)],
    )
    assert recalled == [f"阿强({AQIANG})：{TRIP}", "小红(2002)：下周三我也去厦门出差，好烦"]


async def test_of_two_lines_holding_as_much_the_later_is_read_first(plugin) -> None:
    bot = RecordingBot()
    change = "我下周三的出差改去厦门了"
    recalled = await recalled_after(
        plugin, bot, [(AQIANG, "阿强", TRIP), (2002, "小红", "吃了吗"), (AQIANG, "阿强", change)]
    )
    assert recalled == [f"阿强({AQIANG})：{change}", f"阿强({AQIANG})：{TRIP}"]
