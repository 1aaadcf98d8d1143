"""The model's reply as QQ segments: safe http(s) images (downloaded, size-capped) become
image segments, `@QQ号` of a group member becomes a real @; everything else stays text."""

from __future__ import annotations

import base64

import pytest
from nonebot.adapters.onebot.v11 import Message, MessageSegment

from tests.fakes.events import group_message, private_message
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.openai_server import text
from tests.fakes.qq import QQBot

PNG = png_bytes()
GROUP = 111


def image_file(data: bytes) -> str:
    return f"base64://{base64.b64encode(data).decode()}"


def without_quote(message: Message) -> list[MessageSegment]:
    """The sent segments after the leading reply segment groups get."""
    segments = list(message)
    return segments[1:] if segments and segments[0].type == "reply" else segments


async def test_markdown_image_is_sent_as_an_image_between_its_text(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    url = images.add_image("cat.png", PNG)
    plugin.llm.script(text(f"给你看：![猫]({url}) 可爱吧"))

    await qq.receive(private_message("发张猫图"))

    sent = list(qq.last_sent)
    assert [s.type for s in sent] == ["text", "image", "text"]
    assert sent[0].data["text"] == "给你看："
    assert sent[1].data["file"] == image_file(PNG)
    assert sent[2].data["text"] == " 可爱吧"


async def test_bare_image_url_is_sent_as_an_image(plugin, qq: QQBot, images: ImageServer) -> None:
    url = images.add_image("cat.png", PNG)
    plugin.llm.script(text(f"看这个 {url}"))

    await qq.receive(private_message("发张猫图"))

    sent = list(qq.last_sent)
    assert [s.type for s in sent] == ["text", "image"]
    assert sent[0].data["text"] == "看这个 "
    assert sent[1].data["file"] == image_file(PNG)


@pytest.mark.parametrize(
    "reply",
    [
        "![密码](file:///etc/passwd)",
        "看 file:///etc/passwd.png",
        "![x](data:image/png;base64,iVBORw0KGgo=)",
        "![x](ftp://127.0.0.1/cat.png)",
    ],
    ids=["file-markdown", "file-bare", "data-uri", "ftp"],
)
async def test_non_http_image_link_stays_text(plugin, qq: QQBot, reply: str) -> None:
    plugin.llm.script(text(reply))

    await qq.receive(private_message("发张图"))

    assert [s.type for s in qq.last_sent] == ["text"]
    assert qq.sent_texts == [reply]


@pytest.mark.parametrize("failure", ["oversize", "not-found", "not-an-image"])
async def test_image_link_that_cannot_be_fetched_safely_stays_text(
    plugin, qq: QQBot, images: ImageServer, failure: str
) -> None:
    await plugin.restart(aimemory_image_max_bytes=4096)
    if failure == "oversize":
        url = images.add_oversize("big.png", 8 * 1024 * 1024)
    elif failure == "not-found":
        url = images.add_status("gone.png", 404)
    else:
        url = images.add_body("page.png", b"<html>login</html>")
    reply = f"给你：![图]({url})"
    plugin.llm.script(text(reply))

    await qq.receive(private_message("发张图"))

    assert [s.type for s in qq.last_sent] == ["text"]
    assert qq.sent_texts == [reply]


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "10.0.0.8", "169.254.169.254"]
)
async def test_image_link_to_a_private_host_stays_text_and_is_never_fetched_by_default(
    plugin, qq: QQBot, images: ImageServer, host: str
) -> None:
    await plugin.restart(aimemory_reply_image_allow_private=False)
    url = images.add_image("cat.png", PNG).replace("127.0.0.1", host)
    reply = f"内网的图：![猫]({url})"
    plugin.llm.script(text(reply))

    await qq.receive(private_message("发张图"))

    assert qq.sent_texts == [reply]
    assert images.requests == []


async def test_at_of_a_group_member_becomes_a_real_at(plugin, qq: QQBot) -> None:
    qq.add_member(GROUP, 12345, card="小明")
    plugin.llm.script(text("好的 @12345 你来看看"))

    await qq.receive(group_message("叫一下小明", group_id=GROUP, to_me=True))

    sent = without_quote(qq.last_sent)
    assert [s.type for s in sent] == ["text", "at", "text"]
    assert sent[1].data["qq"] == "12345"
    assert sent[0].data["text"] == "好的 "
    assert sent[2].data["text"] == " 你来看看"


async def test_at_of_someone_outside_the_group_stays_text(plugin, qq: QQBot) -> None:
    plugin.llm.script(text("好的 @12345 你来看看"))

    await qq.receive(group_message("叫一下他", group_id=GROUP, to_me=True))

    assert [s.type for s in without_quote(qq.last_sent)] == ["text"]
    assert qq.sent_texts == ["好的 @12345 你来看看"]
    assert qq.lookups("get_group_member_info") == [{"group_id": GROUP, "user_id": 12345}]


async def test_at_in_a_private_chat_stays_text(plugin, qq: QQBot) -> None:
    plugin.llm.script(text("你可以找 @12345 问问"))

    await qq.receive(private_message("找谁问"))

    assert [s.type for s in qq.last_sent] == ["text"]
    assert qq.sent_texts == ["你可以找 @12345 问问"]
    assert qq.lookups("get_group_member_info") == []


async def test_markdown_image_with_a_title_is_sent_as_an_image(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    url = images.add_image("cat.png", PNG)
    plugin.llm.script(text(f'看：![猫]({url} "一只猫") 可爱吧'))

    await qq.receive(private_message("发张猫图"))

    sent = list(qq.last_sent)
    assert [s.type for s in sent] == ["text", "image", "text"]
    assert sent[0].data["text"] == "看："
    assert sent[1].data["file"] == image_file(PNG)
    assert sent[2].data["text"] == " 可爱吧"


@pytest.mark.parametrize("suffix", [".html", "x", "/index", "-large.txt"])
async def test_link_that_only_starts_like_an_image_url_stays_text(
    plugin, qq: QQBot, images: ImageServer, suffix: str
) -> None:
    url = images.add_image("cat.png", PNG)
    reply = f"看这个 {url}{suffix} 吧"
    plugin.llm.script(text(reply))

    await qq.receive(private_message("发个链接"))

    assert [s.type for s in qq.last_sent] == ["text"]
    assert qq.sent_texts == [reply]
    assert images.requests == []


async def test_bare_image_url_followed_by_chinese_text_is_sent_as_an_image(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    url = images.add_image("cat.png", PNG)
    plugin.llm.script(text(f"看 {url}。可爱吧"))

    await qq.receive(private_message("发张猫图"))

    sent = list(qq.last_sent)
    assert [s.type for s in sent] == ["text", "image", "text"]
    assert sent[2].data["text"] == "。可爱吧"


@pytest.mark.parametrize("reply", ["发到 foo@12345.com 吧", "发到 foo.bar@12345 吧"])
async def test_at_inside_an_email_address_stays_text(plugin, qq: QQBot, reply: str) -> None:
    qq.add_member(GROUP, 12345, card="小明")
    plugin.llm.script(text(reply))

    await qq.receive(group_message("邮箱是什么", group_id=GROUP, to_me=True))

    assert [s.type for s in without_quote(qq.last_sent)] == ["text"]
    assert qq.sent_texts == [reply]


async def test_at_right_after_chinese_text_becomes_a_real_at(plugin, qq: QQBot) -> None:
    qq.add_member(GROUP, 12345, card="小明")
    plugin.llm.script(text("叫@12345 来看看。"))

    await qq.receive(group_message("叫一下小明", group_id=GROUP, to_me=True))

    sent = without_quote(qq.last_sent)
    assert [s.type for s in sent] == ["text", "at", "text"]
    assert sent[1].data["qq"] == "12345"
