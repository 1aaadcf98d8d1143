"""Quoted replies: the quoted message (fetched with `get_msg`, as nonebug skips the
adapter's own lookup) is shown to the model as a short quote before the user's text."""

from __future__ import annotations

import json

from nonebot.adapters.onebot.v11 import MessageSegment

from tests.fakes.events import SELF_ID, group_message, private_message
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.qq import (
    DESCRIPTION,
    QQBot,
    as_dict,
    content,
    data_uri,
    image_urls,
    main_requests,
    qq_image,
    restart_with_vision,
    short_hash,
    user_line,
    vision_requests,
)

UNAVAILABLE = "[引用了一条无法获取的消息]"
PNG = png_bytes()
GROUP = 111


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
    qq.store_message(78, user_id=3001, card="", said="明天八点集合")

    await qq.receive(private_message(content(MessageSegment.reply(78), "几点来着")))

    assert_quote_before_text(user_line(plugin.llm), "：明天八点集合]", "几点来着")


async def test_unavailable_quoted_message_is_marked_and_the_chat_goes_on(plugin, qq: QQBot) -> None:
    await qq.receive(group_message(content(MessageSegment.reply(404), "你看这个"), to_me=True))

    assert qq.lookups("get_msg") == [{"message_id": 404}]
    assert_quote_before_text(user_line(plugin.llm), UNAVAILABLE, "你看这个")
    assert qq.sent_texts == ["好的"]


async def test_reply_to_the_bots_own_message_is_quoted_as_the_bot(plugin, qq: QQBot) -> None:
    qq.store_message(55, user_id=SELF_ID, card="", said="我之前的回答")

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
