from __future__ import annotations

from nonebot.adapters.onebot.v11 import Bot, Message, MessageSegment
from nonebug import App

from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import text


async def test_private_message_is_answered(app: App, plugin) -> None:
    plugin.llm.script(text("你好呀"))
    event = private_message("你好")
    async with app.test_matcher() as ctx:
        bot = ctx.create_bot(base=Bot, self_id="42")
        ctx.receive_event(bot, event)
        ctx.should_call_send(
            event, Message(MessageSegment.text("你好呀")), result={"message_id": 1}
        )
    assert plugin.llm.last_messages()[-1]["content"].endswith("你好")


async def test_group_mention_is_answered_with_quote(app: App, plugin) -> None:
    plugin.llm.script(text("在的"))
    event = group_message("在吗", to_me=True)
    async with app.test_matcher() as ctx:
        bot = ctx.create_bot(base=Bot, self_id="42")
        ctx.receive_event(bot, event)
        ctx.should_call_send(
            event,
            MessageSegment.reply(event.message_id) + MessageSegment.text("在的"),
            result={"message_id": 2},
        )
