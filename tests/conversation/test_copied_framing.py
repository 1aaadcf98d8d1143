"""A small model starts its answer with the header of the memory block injected before the
member's message ("【记忆笔记】以前记下的…"), or with its 【label】: the member never reads
the plugin's framing, and an answer that is nothing else is asked for again (issue #36,
seen with Qwen2.5-Coder-1.5B)."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import text
from tests.fakes.small_model import BlockCopier, NoteCopier

GROUP = 3611
SCOPE = f"g:{GROUP}"
CAT = "小明(2001)家的猫叫团子"
ANSWER = "你家的猫叫团子。"


async def ask_about_the_cat(plugin, responder: BlockCopier | NoteCopier) -> list[str]:
    """The member asks what the cat is called, with the cat's memory injected; what the bot
    sent, and the request shows the block was there."""
    from nonebot_plugin_aimemory import prompts

    assert (await plugin.runtime.memory.service.save(SCOPE, CAT)).status == "saved"
    plugin.llm.responder = responder
    bot = RecordingBot()
    await bot.receive(group_message("我家猫叫什么名字来着？", group_id=GROUP, to_me=True))
    first = plugin.llm.chat_requests[0]["messages"][-1]["content"]
    assert first.startswith(prompts.MEMORY_INJECTION_HEADER)
    return bot.sent_texts


def chat_tool_choices(plugin) -> list[str | None]:
    return [body.get("tool_choice") for body in plugin.llm.chat_requests]


async def test_a_copied_label_is_left_out_of_the_answer(plugin) -> None:
    sent = await ask_about_the_cat(plugin, BlockCopier(said=ANSWER, label_only=True))

    assert sent == [ANSWER]
    assert chat_tool_choices(plugin) == [None]


async def test_a_copied_header_is_left_out_of_the_answer(plugin) -> None:
    sent = await ask_about_the_cat(plugin, BlockCopier(said=ANSWER))

    assert sent == [ANSWER]


async def test_an_answer_that_is_only_the_header_is_asked_for_again(plugin) -> None:
    # the forced request (tool_choice "none") gets the model's plain answer
    sent = await ask_about_the_cat(plugin, BlockCopier(answer=ANSWER))

    assert sent == [ANSWER]
    assert chat_tool_choices(plugin) == [None, "none"]


async def test_brackets_of_the_members_own_are_kept(plugin) -> None:
    plugin.llm.responder = BlockCopier(said="推荐你看【三体】", label_only=True)
    bot = RecordingBot()
    await bot.receive(group_message("推荐本书吧", group_id=GROUP, to_me=True))

    # no block was injected: the message's first line is the member's own
    (reply,) = bot.sent_texts
    assert reply.endswith("推荐你看【三体】")


async def test_a_note_said_back_in_its_quotes_is_asked_for_again(plugin) -> None:
    sent = await ask_about_the_cat(plugin, NoteCopier(answer=ANSWER))

    # The copy ("[2001] 「小明(2001)家的猫叫团子」") never reaches the member.
    assert sent == [ANSWER]
    assert chat_tool_choices(plugin) == [None, "none"]


async def test_a_note_restated_in_own_words_is_kept(plugin) -> None:
    own = "你家猫叫团子呀，小明(2001)家的猫叫团子"
    sent = await ask_about_the_cat(plugin, BlockCopier(said=own, label_only=True))

    assert sent == [own]
    assert chat_tool_choices(plugin) == [None]


async def test_a_note_line_copied_without_its_quotes_loses_its_marks(plugin) -> None:
    # the note carries who it is about; the model copies its line, marks and all
    service = plugin.runtime.memory.service
    assert (await service.save(SCOPE, CAT, user_id="2001")).status == "saved"
    plugin.llm.responder = NoteCopier(whole_line=True)
    bot = RecordingBot()
    await bot.receive(group_message("我家猫叫什么名字来着？", group_id=GROUP, to_me=True))
    # the member reads the words, not the note's marks
    assert bot.sent_texts == [CAT]


async def test_a_line_written_in_a_notes_shape_loses_its_tag(plugin) -> None:
    # the real small model, shown "#u46fx [个人] 「阿强(20002)说：我对菠萝过敏…」", answered
    # the question about the car with a line of its own in that shape
    shaped = "「小明(20001)说：我家猫叫咪咪。」"
    plugin.llm.responder = lambda body: text(f"[20001]{shaped}")
    bot = RecordingBot()
    asking = group_message("我家猫叫什么名字来着？", group_id=GROUP, user_id=20001, to_me=True)
    await bot.receive(asking)

    assert bot.sent_texts == [shaped]
