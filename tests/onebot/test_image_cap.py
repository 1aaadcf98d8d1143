"""Images of one incoming message: at most five are downloaded (the quote's included; a
forwarded record's images are never downloaded), the rest are markers, as the bot shows an
image it only logs."""

from __future__ import annotations

from typing import Any

from nonebot.adapters.onebot.v11 import MessageSegment

from tests.fakes.events import group_message
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.qq import (
    DESCRIPTION,
    QQBot,
    as_dict,
    content,
    image_urls,
    main_requests,
    qq_image,
    restart_with_vision,
    short_hash,
    user_line,
    vision_requests,
)

MAX_IMAGES = 5
GROUP = 111


def pictures(images: ImageServer, name: str, count: int) -> list[MessageSegment]:
    """`count` different pictures hosted on the image server, as NapCat sends them."""
    return [
        qq_image(
            images.add_image(f"download/{name}{i}.png", png_bytes(rgb=(i, len(name), 7))),
            file=f"{name}{i}.png",
        )
        for i in range(count)
    ]


def downloads(images: ImageServer, name: str, count: int) -> list[int]:
    """How often each of the pictures `name0`..`name<count-1>` was requested."""
    return [images.hits(f"download/{name}{i}.png") for i in range(count)]


def plain_marker(file: str) -> str:
    """The marker of an image that was not read: the short hash of its file name."""
    return f"[图片 {short_hash(file.encode())}]"


async def test_a_message_of_twelve_images_downloads_only_five(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)

    await qq.receive(group_message(content("看图", *pictures(images, "p", 12)), to_me=True))

    assert len(images.requests) == MAX_IMAGES
    assert downloads(images, "p", 12) == [1] * 5 + [0] * 7
    line = user_line(plugin.llm)
    assert line.count(f"：{DESCRIPTION}]") == MAX_IMAGES
    assert all(plain_marker(f"p{i}.png") in line for i in range(5, 12)), line
    assert len(vision_requests(plugin.llm)) == MAX_IMAGES
    assert qq.sent_texts == ["好的"]


async def test_a_multimodal_model_gets_five_of_twelve_images(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await plugin.restart(aimemory_multimodal=True)

    await qq.receive(group_message(content("看图", *pictures(images, "m", 12)), to_me=True))

    user_message = main_requests(plugin.llm)[-1]["messages"][-1]
    assert len(image_urls(user_message)) == MAX_IMAGES
    assert all(url.startswith("data:image/png;base64,") for url in image_urls(user_message))
    line = user_line(plugin.llm)
    assert all(plain_marker(f"m{i}.png") in line for i in range(5, 12)), line
    assert len(images.requests) == MAX_IMAGES


async def test_images_of_the_quote_count_first(plugin, qq: QQBot, images: ImageServer) -> None:
    await restart_with_vision(plugin)
    quoted = [as_dict(picture) for picture in pictures(images, "q", 3)]
    qq.store_content(70, user_id=123, card="小明", message=quoted)
    qq.stored_messages[70]["group_id"] = GROUP
    own = pictures(images, "o", 4)

    await qq.receive(
        group_message(content(MessageSegment.reply(70), "这些呢", *own), group_id=GROUP, to_me=True)
    )

    assert downloads(images, "q", 3) == [1, 1, 1]
    assert downloads(images, "o", 4) == [1, 1, 0, 0]
    line = user_line(plugin.llm)
    assert plain_marker("o2.png") in line
    assert plain_marker("o3.png") in line


async def test_failed_downloads_count_against_the_cap(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    missing = [qq_image(images.url(f"gone/{i}.png"), file=f"gone{i}.png") for i in range(5)]
    (last,) = pictures(images, "late", 1)

    await qq.receive(group_message(content("看图", *missing, last), to_me=True))

    assert len(images.requests) == MAX_IMAGES
    assert downloads(images, "late", 1) == [0]
    assert plain_marker("late0.png") in user_line(plugin.llm)


def forwarded(said: list[dict[str, Any]]) -> MessageSegment:
    """A forwarded record of one message, inline as NapCat sends it."""
    node = {
        "message_id": 1,
        "message_type": "group",
        "sender": {"user_id": 1, "nickname": "甲", "card": ""},
        "message": said,
        "message_format": "array",
    }
    return MessageSegment("forward", {"id": "fw", "content": [node]})


async def test_forwarded_images_are_never_downloaded_nor_use_the_cap(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    record = forwarded([as_dict(picture) for picture in pictures(images, "f", 6)])

    await qq.receive(group_message(content(record, *pictures(images, "p", 5)), to_me=True))

    assert downloads(images, "f", 6) == [0] * 6
    assert downloads(images, "p", 5) == [1] * 5
    assert user_line(plugin.llm).count(f"：{DESCRIPTION}]") == MAX_IMAGES
