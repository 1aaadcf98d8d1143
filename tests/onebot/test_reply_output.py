"""The model's reply as QQ segments: safe http(s) images (downloaded, size-capped, from the
address that was checked, at most three tries a reply) become image segments, `@QQ号` of a
group member becomes a real @; everything else stays text."""

from __future__ import annotations

import asyncio
import base64

import pytest
from nonebot.adapters.onebot.v11 import Message, MessageSegment

from tests.fakes.events import group_message, private_message
from tests.fakes.image_server import ImageServer, gzip_bomb, png_bytes
from tests.fakes.network import (
    Connection,
    RecordingTransport,
    ScriptedResolver,
    proxies_to_a_closed_port,
)
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


async def test_image_host_that_rebinds_is_fetched_only_from_the_address_it_was_checked_at(
    plugin, qq: QQBot
) -> None:
    from nonebot_plugin_aimemory.media.fetch import SafeFetcher

    runtime = await plugin.restart(aimemory_reply_image_allow_private=False)
    # A rebinding name server: a public address for the check, the bot's machine after.
    resolver = ScriptedResolver({"evil.test": [["93.184.216.34"], ["127.0.0.1"]]})
    transport = RecordingTransport(body=PNG)
    runtime.images.fetcher = SafeFetcher(resolver=resolver, transport=transport)
    plugin.llm.script(text("看：![猫](http://evil.test/cat.png)"))

    await qq.receive(private_message("发张猫图"))

    assert [s.type for s in qq.last_sent] == ["text", "image"]
    assert resolver.lookups == ["evil.test"]
    assert transport.connections == [Connection("http", "93.184.216.34", "evil.test", None)]


async def test_reply_of_fifty_hanging_image_links_waits_one_timeout_for_three_attempts(
    plugin, qq: QQBot, images: ImageServer, monkeypatch
) -> None:
    from nonebot_plugin_aimemory.media import images as media

    monkeypatch.setattr(media, "DOWNLOAD_TIMEOUT_SECONDS", 0.5)
    urls = [images.add_slow(f"hang/{i}.png", PNG, delay_seconds=30) for i in range(50)]
    reply = " ".join(f"![图{i}]({url})" for i, url in enumerate(urls))
    plugin.llm.script(text(reply), text("还在"))
    loop = asyncio.get_running_loop()
    started = loop.time()

    await qq.receive(private_message("发五十张图"))

    elapsed = loop.time() - started
    assert elapsed < 1.5, elapsed  # one timeout: the three attempts run together
    assert sum(images.hits(f"hang/{i}.png") for i in range(50)) == 3
    assert all(call.segment_types == ["text"] for call in qq.sent)
    sent = "".join(qq.sent_texts)
    assert all(f"({url})" in sent for url in urls)
    await qq.receive(private_message("你还在吗"))
    assert qq.sent_texts[-1] == "还在"


async def test_image_link_to_a_gzip_bomb_stays_text_and_asks_for_an_unencoded_body(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await plugin.restart(aimemory_image_max_bytes=4096)
    url = images.add_encoded("bomb.png", gzip_bomb(32 * 1024 * 1024), "gzip")
    reply = f"给你：![图]({url})"
    plugin.llm.script(text(reply))

    await qq.receive(private_message("发张图"))

    assert qq.sent_texts == [reply]
    (served,) = images.served("bomb.png")
    assert served.headers["accept-encoding"] == "identity"


async def test_proxy_variables_of_the_environment_do_not_carry_reply_image_fetches(
    plugin, qq: QQBot, images: ImageServer, monkeypatch
) -> None:
    # The proxy is dead; the model, on `localhost`, is exempt, the image host is not.
    proxies_to_a_closed_port(monkeypatch, no_proxy="localhost")
    await plugin.restart(aimemory_api_base=plugin.llm.base_url.replace("127.0.0.1", "localhost"))
    url = images.add_image("cat.png", PNG)
    plugin.llm.script(text(f"给你看：![猫]({url})"))

    await qq.receive(private_message("发张猫图"))

    assert [s.type for s in qq.last_sent] == ["text", "image"]
    assert qq.last_sent[1].data["file"] == image_file(PNG)
    assert images.hits("cat.png") == 1
