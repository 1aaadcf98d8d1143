"""A small model answers with a tool result of its turn said back ("已保存记忆 #skpn …"):
that is no answer, and the member never reads it while the model can still say something
else (issue #36, seen with Qwen2.5-Coder-1.5B)."""

from __future__ import annotations

from tests.conversation.test_turn_always_answers import ANSWER, ask, saved, tool_choices
from tests.fakes.bots import RecordingBot
from tests.fakes.small_model import ResultEchoer


async def test_a_copied_tool_result_is_asked_again_and_the_answer_sent(plugin) -> None:
    # given a model that saves, then answers with the save's result
    plugin.llm.responder = ResultEchoer(answer=ANSWER)
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the plugin asks for an answer without tools and sends that one; saved once
    assert tool_choices(plugin) == [None, None, "none"]
    assert bot.sent_texts == [ANSWER]
    assert not any("已保存记忆" in sent for sent in bot.sent_texts)
    assert await saved(plugin) == ["小红下周三去杭州出差"]


async def test_a_model_that_only_copies_results_still_ends_its_turn_in_text(plugin) -> None:
    # given a model that answers every request after its save with the save's result
    plugin.llm.responder = ResultEchoer(always=True)
    bot = RecordingBot()
    # when the member asks it to remember
    await bot.receive(ask())
    # then the last mode's copy is what the member gets: one reply, no notice, saved once
    (reply,) = bot.sent_texts
    assert reply.startswith("已保存记忆")
    assert await saved(plugin) == ["小红下周三去杭州出差"]


async def test_an_answer_in_its_own_words_about_the_saved_fact_is_kept(plugin) -> None:
    # given a model whose answer after its save repeats the fact in its own words
    own = "好的，记住小红下周三要去杭州出差啦，一路顺风！"
    plugin.llm.responder = ResultEchoer(own_words=own)
    bot = RecordingBot()
    await bot.receive(ask())
    # then that answer is no copy of the result: taken at once, tools still offered
    assert tool_choices(plugin) == [None, None]
    assert bot.sent_texts == [own]


async def test_a_confirmation_in_the_members_words_the_save_kept_is_kept(plugin) -> None:
    # given a model that saves the member's words as they were, then confirms them: most
    # of its answer is in the save's result ("已保存记忆 #meze 记住：周六下午三点…")
    said = "记住：周六下午三点在万达影城门口集合"
    own = "好的，周六下午三点在万达影城门口集合"
    plugin.llm.responder = ResultEchoer(arguments={"content": said}, own_words=own)
    bot = RecordingBot()
    await bot.receive(ask(said))
    # then those words are the member's, not the result's: the answer is taken at once
    assert tool_choices(plugin) == [None, None]
    assert bot.sent_texts == [own]
