"""Conversations through NoneBot: who is answered, what the model sees, what is kept."""

from __future__ import annotations

import json

import pytest
from nonebot.adapters.onebot.v11 import Bot, Message, MessageSegment
from nonebug import App

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message
from tests.fakes.openai_server import text


async def stored_bodies(plugin, key: str) -> list[dict]:
    rows = await plugin.runtime.database.read(
        "SELECT body FROM messages WHERE session_key = ? ORDER BY seq", (key,)
    )
    return [json.loads(body) for (body,) in rows]


async def test_private_message_is_answered_through_nonebug(app: App, plugin) -> None:
    plugin.llm.script(text("你好呀"))
    event = private_message("你好")
    async with app.test_matcher() as ctx:
        bot = ctx.create_bot(base=Bot, self_id="42")
        ctx.receive_event(bot, event)
        ctx.should_call_send(
            event, Message(MessageSegment.text("你好呀")), result={"message_id": 1}
        )
    last_user = plugin.llm.last_messages()[-1]
    assert last_user["role"] == "user"
    assert last_user["content"].startswith("[")
    assert last_user["content"].endswith("] 你好")


async def test_group_mention_is_answered_as_a_quote(app: App, plugin) -> None:
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


async def test_group_line_names_the_speaker_and_qq_number(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(group_message("周五聚餐吗", to_me=True, card="阿强", user_id=5566))
    assert "阿强(5566)：周五聚餐吗" in plugin.llm.last_messages()[-1]["content"]


async def test_system_prompt_says_where_the_chat_happens(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(group_message("hi", to_me=True, group_id=777))
    system = plugin.llm.last_messages()[0]
    assert system["role"] == "system"
    assert "777" in system["content"]


async def test_unaddressed_group_message_makes_no_llm_call(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(group_message("大家好"))
    await bot.receive(group_message(MessageSegment.at(9999) + MessageSegment.text(" 你好")))
    assert plugin.llm.chat_requests == []
    assert bot.sent == []


async def test_the_bots_own_messages_reported_back_are_never_answered(plugin) -> None:
    from tests.fakes.events import SELF_ID

    bot = RecordingBot()
    await bot.receive(private_message("你好呀", user_id=SELF_ID))
    await bot.receive(group_message("@大家 你好", user_id=SELF_ID, to_me=True))
    await bot.receive(group_message("~对话 状态", user_id=SELF_ID))

    assert plugin.llm.chat_requests == []
    assert bot.sent == []


async def test_mention_in_the_middle_is_detected_by_the_plugin(plugin) -> None:
    bot = RecordingBot()
    message = (
        MessageSegment.text("问一下 ") + MessageSegment.at(42) + MessageSegment.text(" 今天几号")
    )
    await bot.receive(group_message(message, to_me=False))
    assert len(plugin.llm.chat_requests) == 1
    assert "@" not in plugin.llm.last_messages()[-1]["content"].split("：", 1)[1]


async def test_history_carries_across_turns(plugin) -> None:
    bot = RecordingBot()
    plugin.llm.script(text("记住了，你叫小明"), text("你叫小明"))
    await bot.receive(private_message("我叫小明"))
    await bot.receive(private_message("我叫什么？"))
    contents = [m["content"] for m in plugin.llm.last_messages()]
    assert any(c.endswith("我叫小明") for c in contents)
    assert "记住了，你叫小明" in contents
    assert bot.sent_texts == ["记住了，你叫小明", "你叫小明"]


async def test_history_survives_a_restart(plugin) -> None:
    bot = RecordingBot()
    plugin.llm.script(text("好的，周五见"))
    await bot.receive(group_message("我们周五开会", to_me=True))
    await plugin.restart()
    await bot.receive(group_message("我们哪天开会？", to_me=True))
    contents = [m["content"] for m in plugin.llm.last_messages()]
    assert any("我们周五开会" in c for c in contents)
    assert "好的，周五见" in contents


async def test_two_groups_do_not_share_context(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(group_message("A 群的秘密是蓝色", to_me=True, group_id=1))
    await bot.receive(group_message("秘密是什么？", to_me=True, group_id=2))
    contents = " ".join(str(m["content"]) for m in plugin.llm.last_messages())
    assert "蓝色" not in contents


async def test_two_private_users_do_not_share_context(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(private_message("我的暗号是芝麻开门", user_id=1))
    await bot.receive(private_message("暗号是什么？", user_id=2))
    contents = " ".join(str(m["content"]) for m in plugin.llm.last_messages())
    assert "芝麻开门" not in contents


async def test_group_members_share_one_group_conversation(plugin) -> None:
    bot = RecordingBot()
    await bot.receive(group_message("我喜欢猫", to_me=True, user_id=1, card="甲"))
    await bot.receive(group_message("他喜欢什么？", to_me=True, user_id=2, card="乙"))
    contents = " ".join(str(m["content"]) for m in plugin.llm.last_messages())
    assert "甲(1)：我喜欢猫" in contents


async def test_tool_round_trip_through_the_plugin(plugin) -> None:
    from nonebot_plugin_aimemory import Tool, register_tool_provider, unregister_tool_provider

    seen_keys: list[str] = []

    async def lucky_number(arguments: dict) -> str:
        return "7"

    def provider(runtime, key):
        seen_keys.append(key)
        return [Tool("lucky_number", "返回幸运数字", lucky_number)]

    register_tool_provider(provider)
    try:
        await plugin.restart()
        plugin.llm.script(
            __import__("tests.fakes.openai_server", fromlist=["tool_calls"]).tool_calls(
                ("lucky_number", {})
            ),
            text("幸运数字是 7"),
        )
        bot = RecordingBot()
        await bot.receive(private_message("我的幸运数字？", user_id=88))
    finally:
        unregister_tool_provider(provider)
    assert bot.sent_texts == ["幸运数字是 7"]
    second = plugin.llm.chat_requests[-1]["messages"]
    assert second[-1] == {
        "role": "tool",
        "content": "7",
        "tool_call_id": "call_1",
        "name": "lucky_number",
    }
    assert seen_keys == ["f:88"]


async def test_unknown_tool_gets_an_error_result_and_the_turn_goes_on(plugin) -> None:
    from tests.fakes.openai_server import tool_calls

    plugin.llm.script(tool_calls(("no_such_tool", {"x": 1})), text("抱歉，换个方法"))
    bot = RecordingBot()
    await bot.receive(private_message("试试"))
    assert bot.sent_texts == ["抱歉，换个方法"]
    tool_message = plugin.llm.chat_requests[-1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "no_such_tool" in tool_message["content"]


async def test_image_is_kept_as_a_marker_in_the_store(plugin) -> None:
    bot = RecordingBot()
    message = MessageSegment.text("看这个") + MessageSegment(
        "image", {"file": "ABCDEF.image", "url": "https://multimedia.nt.qq.com.cn/download?x=1"}
    )
    await bot.receive(private_message(message, user_id=77))
    bodies = await stored_bodies(plugin, "f:77")
    stored = bodies[0]["content"]
    assert "[图片 " in stored
    assert "multimedia" not in json.dumps(bodies, ensure_ascii=False)
    assert "base64" not in json.dumps(bodies, ensure_ascii=False)


async def test_a_20000_character_paste_is_answered_and_kept_cut_with_a_visible_note(
    plugin,
) -> None:
    bot = RecordingBot()
    paste = ("这是一段很长的粘贴内容。" * 1700)[:20_000]
    plugin.llm.script(text("收到长文"))
    await bot.receive(private_message(paste, user_id=66))
    assert bot.sent_texts == ["收到长文"]
    sent = plugin.llm.last_messages()[-1]["content"]
    assert paste[:7_900] in sent
    assert "（以下省略 " in sent
    assert len(sent) < 8_100
    bodies = await stored_bodies(plugin, "f:66")
    assert bodies[0]["content"] == sent


async def test_cq_code_lookalike_text_stays_literal(plugin) -> None:
    bot = RecordingBot()
    plugin.llm.script(text("[CQ:at,qq=all] 大家好"))
    await bot.receive(private_message("[CQ:image,file=http://evil/x.png]", user_id=55))
    assert plugin.llm.last_messages()[-1]["content"].endswith("[CQ:image,file=http://evil/x.png]")
    assert bot.sent[0].segment_types == ["text"]
    assert bot.sent_texts == ["[CQ:at,qq=all] 大家好"]


async def test_sql_looking_text_is_stored_verbatim(plugin) -> None:
    bot = RecordingBot()
    evil = "'); DROP TABLE messages; -- \" OR 1=1"
    await bot.receive(private_message(evil, user_id=44))
    await bot.receive(private_message("还在吗", user_id=44))
    bodies = await stored_bodies(plugin, "f:44")
    assert bodies[0]["content"].endswith(evil)
    assert len(bodies) == 4


async def test_long_reply_is_split_into_several_messages(plugin) -> None:
    await plugin.restart(aimemory_reply_max_chars=100)
    long_reply = "\n\n".join(f"第{i}段：" + "内容" * 30 for i in range(4))
    plugin.llm.script(text(long_reply))
    bot = RecordingBot()
    await bot.receive(private_message("写长一点"))
    assert len(bot.sent) > 1
    assert all(len(t) <= 100 for t in bot.sent_texts)
    assert "".join(bot.sent_texts).replace("\n", "") == long_reply.replace("\n", "")


@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        ("**重点**是明天下雨", "重点是明天下雨"),
        ("## 天气\n明天有雨", "天气\n明天有雨"),
        ("看这里：[天气预报](https://example.com/w)", "看这里：天气预报（https://example.com/w）"),
        ("代码：\n```python\nprint(1)\n```", "代码：\nprint(1)"),
        ("2**10 等于 1024，a * b 是乘法", "2**10 等于 1024，a * b 是乘法"),
        ("#话题 不是标题", "#话题 不是标题"),
    ],
    ids=["bold", "heading", "link", "fence", "not-bold", "hashtag"],
)
async def test_markdown_is_shown_as_plain_text_in_qq(plugin, reply: str, shown: str) -> None:
    plugin.llm.script(text(reply))
    bot = RecordingBot()
    await bot.receive(private_message("明天天气"))
    assert bot.sent_texts == [shown]
    await bot.receive(private_message("好的"))
    assert reply in [m["content"] for m in plugin.llm.last_messages()]  # the model's own text


async def test_reasoning_is_never_sent_to_qq(plugin) -> None:
    plugin.llm.script(text("<think>用户在打招呼，我应该……</think>你好！", reasoning="内部推理"))
    bot = RecordingBot()
    await bot.receive(private_message("嗨"))
    assert bot.sent_texts == ["你好！"]
    assert plugin.llm.chat_requests  # the reply was produced by the model
    await bot.receive(private_message("再说一遍"))
    replayed = " ".join(str(m["content"]) for m in plugin.llm.last_messages())
    assert "think" not in replayed
    assert "内部推理" not in replayed


async def test_a_broken_tool_provider_does_not_break_the_conversation(plugin) -> None:
    from nonebot_plugin_aimemory import register_tool_provider, unregister_tool_provider

    def broken(runtime, key):
        raise RuntimeError("provider bug")

    register_tool_provider(broken)
    try:
        await plugin.restart()
        plugin.llm.script(text("照常回答"))
        bot = RecordingBot()
        await bot.receive(private_message("你好", user_id=89))
    finally:
        unregister_tool_provider(broken)
    assert bot.sent_texts == ["照常回答"]
    tool_names = [t["function"]["name"] for t in plugin.llm.chat_requests[-1]["tools"]]
    assert "memory_save" in tool_names


async def test_only_allowlisted_groups_are_answered(plugin) -> None:
    await plugin.restart(aimemory_group_allowlist=[111])
    plugin.llm.script(text("在的"))
    bot = RecordingBot()
    await bot.receive(group_message("在吗", group_id=222, to_me=True))
    await bot.receive(group_message("~对话 状态", group_id=222))
    await bot.receive(group_message("在吗", group_id=111, to_me=True))
    assert bot.sent_texts == ["在的"]
    assert len(plugin.llm.chat_requests) == 1


async def test_a_denylisted_group_is_ignored_even_when_allowlisted(plugin) -> None:
    await plugin.restart(aimemory_group_allowlist=[111], aimemory_group_denylist=[111])
    bot = RecordingBot()
    await bot.receive(group_message("在吗", group_id=111, to_me=True))
    assert bot.sent == []
    assert plugin.llm.chat_requests == []


async def test_private_chat_switched_off_answers_superusers_only(plugin) -> None:
    from tests.conftest import SUPERUSER_ID

    await plugin.restart(aimemory_private_chat=False)
    plugin.llm.script(text("主人好"))
    bot = RecordingBot()
    await bot.receive(private_message("你好", user_id=3001))
    await bot.receive(private_message("你好", user_id=int(SUPERUSER_ID)))
    assert bot.sent_texts == ["主人好"]
    assert len(plugin.llm.chat_requests) == 1
