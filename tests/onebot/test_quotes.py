"""Quoted replies: the quoted message (fetched with `get_msg`, as nonebug skips the
adapter's own lookup) is shown to the model as a short quote before the user's text; a
quoted message said in another chat is shown as `[引用 无法显示]`, never its content. (The
bot's own messages, placed by the record of where each was sent:
test_quotes_of_bot_messages.py.)"""

from __future__ import annotations

import json
from typing import Any

from nonebot.adapters.onebot.v11 import MessageSegment

from tests.fakes.events import SELF_ID, group_message, private_message
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.openai_server import last_user_text
from tests.fakes.qq import (
    DESCRIPTION,
    QQBot,
    as_dict,
    content,
    data_uri,
    everything_persisted,
    image_urls,
    main_requests,
    qq_image,
    restart_with_vision,
    short_hash,
    user_line,
    vision_requests,
)

UNAVAILABLE = "[引用了一条无法获取的消息]"
HIDDEN = "[引用 无法显示]"
PNG = png_bytes()
GROUP = 111
OTHER_GROUP = 222
PRIVATE_USER = 3001
SECRET = "别的群的悄悄话"


def said_in_group(qq: QQBot, message_id: int, group_id: int, said: str, **sender: Any) -> None:
    """A group message `get_msg` returns as NapCat does, with the group it was said in."""
    qq.store_message(message_id, user_id=sender.get("user_id", 123), card="小明", said=said)
    qq.stored_messages[message_id]["group_id"] = group_id


def said_privately(qq: QQBot, message_id: int, user_id: int, said: str, **fields: Any) -> None:
    """A private message `get_msg` returns (NapCat adds `target_id` to the bot's own)."""
    qq.store_message(message_id, user_id=user_id, card="", said=said)
    qq.stored_messages[message_id].update(message_type="private", **fields)


def adapter_reply(said: str, **fields: Any):
    """`event.reply` as the adapter fills it from `get_msg` (extra fields are kept)."""
    from nonebot.adapters.onebot.v11.event import Reply
    from nonebot.compat import type_validate_python

    answer = {
        "time": 1_796_000_000,
        "message_type": "group",
        "message_id": 90,
        "real_id": 90,
        "sender": {"user_id": 123, "nickname": "小明"},
        "message": [{"type": "text", "data": {"text": said}}],
        **fields,
    }
    return type_validate_python(Reply, answer)


async def sent_by_the_bot(plugin, message_id: int, chat_key: str) -> None:
    """The plugin's record that the bot sent `message_id` to the chat `chat_key`."""
    from nonebot_plugin_aimemory.store.sent_messages import SentMessage
    from nonebot_plugin_aimemory.store.times import utc_now_text

    record = SentMessage(str(SELF_ID), str(message_id), chat_key, utc_now_text())
    await plugin.runtime.outbound.sent.record([record])


async def assert_never_shown(plugin, said: str) -> None:
    """`said` reached no model request and nothing stored."""
    assert said not in json.dumps(plugin.llm.chat_requests, ensure_ascii=False)
    await plugin.runtime.chat_log.flush()
    assert said not in await everything_persisted(plugin)


def assert_quote_before_text(line: str, quote: str, user_text: str) -> None:
    assert quote in line, line
    assert line.index(quote) < line.index(user_text)


async def test_quoted_message_is_fetched_and_shown_before_the_users_text(plugin, qq: QQBot) -> None:
    qq.store_message(77, user_id=123, card="小明", said="原文")

    await qq.receive(
        group_message(content(MessageSegment.reply(77), "这个怎么样"), user_id=2002, to_me=True)
    )

    assert qq.lookups("get_msg") == [{"message_id": 77}]
    line = user_line(plugin.llm)
    assert line.endswith("[引用 小明(123)：原文]\n这个怎么样")
    assert_quote_before_text(line, "[引用 小明(123)：原文]", "这个怎么样")
    assert qq.sent_texts == ["好的"]


async def test_quote_in_a_private_chat_is_shown_too(plugin, qq: QQBot) -> None:
    said_privately(qq, 78, user_id=PRIVATE_USER, said="明天八点集合")

    await qq.receive(private_message(content(MessageSegment.reply(78), "几点来着")))

    assert_quote_before_text(user_line(plugin.llm), "：明天八点集合]", "几点来着")


async def test_unavailable_quoted_message_is_marked_and_the_chat_goes_on(plugin, qq: QQBot) -> None:
    await qq.receive(group_message(content(MessageSegment.reply(404), "你看这个"), to_me=True))

    assert qq.lookups("get_msg") == [{"message_id": 404}]
    assert_quote_before_text(user_line(plugin.llm), UNAVAILABLE, "你看这个")
    assert qq.sent_texts == ["好的"]


async def test_reply_to_the_bots_own_message_is_quoted_as_the_bot(plugin, qq: QQBot) -> None:
    qq.store_message(55, user_id=SELF_ID, card="", said="我之前的回答")
    await sent_by_the_bot(plugin, 55, f"g:{GROUP}")

    await qq.receive(group_message(content(MessageSegment.reply(55), "为什么"), to_me=True))

    assert_quote_before_text(user_line(plugin.llm), "[引用 机器人：我之前的回答]", "为什么")


async def test_reply_segment_with_a_malformed_id_is_marked_and_the_chat_goes_on(
    plugin, qq: QQBot
) -> None:
    malformed = MessageSegment("reply", {"id": "not-a-number"})

    await qq.receive(group_message(content(malformed, "这个呢"), to_me=True))

    assert qq.sent_texts == ["好的"]
    assert_quote_before_text(user_line(plugin.llm), UNAVAILABLE, "这个呢")


# ---------------------------------------------------------------------------- quoted content


async def test_quoted_image_shows_the_same_marker_and_description_as_the_original(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", PNG)
    picture = qq_image(url)
    await qq.receive(group_message(content(picture), user_id=123, card="小明", to_me=True))
    original = f"[图片 {short_hash(PNG)}：{DESCRIPTION}]"
    assert user_line(plugin.llm).endswith(original)
    qq.store_content(80, user_id=123, card="小明", message=[as_dict(picture)])

    await qq.receive(
        group_message(content(MessageSegment.reply(80), "这是哪里"), user_id=2002, to_me=True)
    )

    assert user_line(plugin.llm).endswith(f"[引用 小明(123)：{original}]\n这是哪里")
    assert len(vision_requests(plugin.llm)) == 1


async def test_quoted_image_reaches_a_multimodal_model_as_a_data_uri(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await plugin.restart(aimemory_multimodal=True)
    url = images.add_image("download/cat.png", PNG)
    qq.store_content(81, user_id=123, card="小明", message=[as_dict(qq_image(url))])

    await qq.receive(group_message(content(MessageSegment.reply(81), "这是哪里"), to_me=True))

    request = main_requests(plugin.llm)[-1]
    assert image_urls(request["messages"][-1]) == [data_uri(PNG)]
    assert url not in json.dumps(request, ensure_ascii=False)
    assert user_line(plugin.llm).endswith("这是哪里")


async def test_quoted_message_in_cq_code_text_shows_markers_never_urls(plugin, qq: QQBot) -> None:
    # go-cqhttp's string format: the whole message is CQ-code text.
    said = "看这个[CQ:image,file=abc.png,url=https://gchat.qpic.cn/x/abc.png][CQ:face,id=14]"
    qq.store_content(82, user_id=123, card="小明", message=said)

    await qq.receive(group_message(content(MessageSegment.reply(82), "哈哈"), to_me=True))

    line = user_line(plugin.llm)
    assert "[引用 小明(123)：看这个[图片 " in line
    assert "[表情:14]" in line
    assert "CQ:" not in line
    assert "https://" not in line


async def test_at_in_a_quoted_message_shows_the_members_name(plugin, qq: QQBot) -> None:
    qq.add_member(GROUP, 456, card="阿强")
    said = [as_dict(MessageSegment.at(456)), {"type": "text", "data": {"text": "来一下"}}]
    qq.store_content(83, user_id=123, card="小明", message=said)

    await qq.receive(
        group_message(content(MessageSegment.reply(83), "他来了吗"), group_id=GROUP, to_me=True)
    )

    assert "[引用 小明(123)：@阿强 来一下]" in user_line(plugin.llm)


# ---------------------------------------------------------------------------- other chats


async def test_quote_from_another_group_is_hidden(plugin, qq: QQBot) -> None:
    said_in_group(qq, 84, OTHER_GROUP, SECRET)

    await qq.receive(
        group_message(content(MessageSegment.reply(84), "你们看"), group_id=GROUP, to_me=True)
    )

    assert_quote_before_text(user_line(plugin.llm), HIDDEN, "你们看")
    assert qq.sent_texts == ["好的"]
    await assert_never_shown(plugin, SECRET)


async def test_quote_from_the_same_group_is_shown(plugin, qq: QQBot) -> None:
    said_in_group(qq, 85, GROUP, "本群的话")

    await qq.receive(
        group_message(content(MessageSegment.reply(85), "对吧"), group_id=GROUP, to_me=True)
    )

    assert "[引用 小明(123)：本群的话]\n对吧" in user_line(plugin.llm)


async def test_quote_without_a_group_id_is_shown_in_a_group(plugin, qq: QQBot) -> None:
    # Lagrange's get_msg reports the message type but not the group: nothing disagrees.
    qq.store_message(86, user_id=123, card="小明", said="不知哪个群")

    await qq.receive(group_message(content(MessageSegment.reply(86), "嗯"), to_me=True))

    assert "[引用 小明(123)：不知哪个群]" in user_line(plugin.llm)


async def test_quote_of_a_private_message_in_a_group_is_hidden(plugin, qq: QQBot) -> None:
    said_privately(qq, 87, user_id=123, said=SECRET)

    await qq.receive(group_message(content(MessageSegment.reply(87), "嗯"), to_me=True))

    assert_quote_before_text(user_line(plugin.llm), HIDDEN, "嗯")
    await assert_never_shown(plugin, SECRET)


async def test_group_message_quoted_in_a_private_chat_is_hidden(plugin, qq: QQBot) -> None:
    # Even the user's own words: a group's message stays in that group.
    said_in_group(qq, 88, GROUP, SECRET, user_id=PRIVATE_USER)

    await qq.receive(private_message(content(MessageSegment.reply(88), "你记得吗")))

    assert_quote_before_text(user_line(plugin.llm), HIDDEN, "你记得吗")
    await assert_never_shown(plugin, SECRET)


async def test_private_message_of_another_user_quoted_in_a_private_chat_is_hidden(
    plugin, qq: QQBot
) -> None:
    said_privately(qq, 89, user_id=3002, said=SECRET)

    await qq.receive(private_message(content(MessageSegment.reply(89), "这是谁说的")))

    assert_quote_before_text(user_line(plugin.llm), HIDDEN, "这是谁说的")
    await assert_never_shown(plugin, SECRET)


async def test_bots_own_private_message_to_another_user_is_hidden(plugin, qq: QQBot) -> None:
    said_privately(qq, 90, user_id=SELF_ID, said=SECRET, target_id=3002)
    said_privately(qq, 91, user_id=SELF_ID, said="给你的回答", target_id=PRIVATE_USER)
    await sent_by_the_bot(plugin, 90, "f:3002")
    await sent_by_the_bot(plugin, 91, f"f:{PRIVATE_USER}")

    await qq.receive(private_message(content(MessageSegment.reply(90), "这个呢")))
    await qq.receive(private_message(content(MessageSegment.reply(91), "那这个呢")))

    hidden, shown = (last_user_text(body["messages"]) for body in main_requests(plugin.llm))
    assert_quote_before_text(hidden, HIDDEN, "这个呢")
    assert "[引用 机器人：给你的回答]" in shown
    await assert_never_shown(plugin, SECRET)


async def test_adapter_filled_reply_from_another_group_is_hidden(plugin, qq: QQBot) -> None:
    event = group_message("看这个", group_id=GROUP, to_me=True)
    event.reply = adapter_reply(SECRET, group_id=OTHER_GROUP)

    await qq.receive(event)

    assert_quote_before_text(user_line(plugin.llm), HIDDEN, "看这个")
    assert qq.lookups("get_msg") == []
    await assert_never_shown(plugin, SECRET)


async def test_adapter_filled_reply_from_the_same_group_is_shown(plugin, qq: QQBot) -> None:
    event = group_message("看这个", group_id=GROUP, to_me=True)
    event.reply = adapter_reply("本群的话", group_id=GROUP)

    await qq.receive(event)

    assert "[引用 小明(123)：本群的话]\n看这个" in user_line(plugin.llm)


async def test_images_of_a_hidden_quote_are_never_downloaded(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/secret.png", PNG)
    qq.store_content(92, user_id=123, card="小明", message=[as_dict(qq_image(url))])
    qq.stored_messages[92]["group_id"] = OTHER_GROUP

    await qq.receive(group_message(content(MessageSegment.reply(92), "这是啥"), to_me=True))

    assert_quote_before_text(user_line(plugin.llm), HIDDEN, "这是啥")
    assert images.hits("download/secret.png") == 0
    assert vision_requests(plugin.llm) == []
