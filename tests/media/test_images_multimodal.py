"""Images with `aimemory_multimodal`: the main model gets the picture itself, as a data URI,
for this turn only; everything persisted keeps a short marker instead."""

from __future__ import annotations

import json

import pytest

from tests.fakes.events import private_message
from tests.fakes.image_server import GIF_BYTES, JPEG_BYTES, ImageServer, png_bytes
from tests.fakes.qq import (
    QQBot,
    content,
    data_uri,
    everything_persisted,
    image_urls,
    main_requests,
    qq_image,
    short_hash,
    stored_bodies,
)

PNG = png_bytes()
KEY = "f:3001"


@pytest.mark.parametrize(
    ("data", "mime"),
    [(PNG, "image/png"), (JPEG_BYTES, "image/jpeg"), (GIF_BYTES, "image/gif")],
    ids=["png", "jpeg", "gif"],
)
async def test_main_request_carries_the_served_bytes_as_a_data_uri(
    plugin, qq: QQBot, images: ImageServer, data: bytes, mime: str
) -> None:
    await plugin.restart(aimemory_multimodal=True)
    url = images.add_image("download/cat", data, content_type=mime)

    await qq.receive(private_message(content("看看这个", qq_image(url))))

    request = main_requests(plugin.llm)[-1]
    assert image_urls(request["messages"][-1]) == [data_uri(data, mime)]
    assert url not in json.dumps(request, ensure_ascii=False)
    assert images.hits("download/cat") == 1
    assert qq.sent_texts == ["好的"]


async def test_persisted_user_message_holds_only_the_marker(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await plugin.restart(aimemory_multimodal=True)
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("看看这个", qq_image(url))))

    user_body = (await stored_bodies(plugin, KEY))[0]
    assert user_body["role"] == "user"
    assert isinstance(user_body["content"], str)
    assert f"[图片 {short_hash(PNG)}]" in user_body["content"]
    raw = json.dumps(user_body, ensure_ascii=False)
    assert "base64" not in raw
    assert "data:" not in raw
    assert "127.0.0.1" not in raw


async def test_next_request_shows_the_earlier_image_as_its_marker(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await plugin.restart(aimemory_multimodal=True)
    url = images.add_image("download/cat.png", PNG)
    await qq.receive(private_message(content("看看这个", qq_image(url))))

    await qq.receive(private_message("刚才那张图是什么颜色"))

    earlier = main_requests(plugin.llm)[-1]["messages"][1]
    assert earlier["role"] == "user"
    assert isinstance(earlier["content"], str)
    assert earlier["content"].endswith(f"看看这个[图片 {short_hash(PNG)}]")
    assert "base64" not in json.dumps(main_requests(plugin.llm)[-1])
    assert images.hits("download/cat.png") == 1


async def test_after_a_restart_the_image_is_still_only_a_marker(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await plugin.restart(aimemory_multimodal=True)
    url = images.add_image("download/cat.png", PNG)
    await qq.receive(private_message(content("看看这个", qq_image(url))))

    await plugin.restart()
    await qq.receive(private_message("还记得那张图吗"))

    request = main_requests(plugin.llm)[-1]
    earlier = request["messages"][1]
    assert earlier["content"].endswith(f"看看这个[图片 {short_hash(PNG)}]")
    assert all(not image_urls(message) for message in request["messages"])
    persisted = await everything_persisted(plugin)
    assert f"[图片 {short_hash(PNG)}]" in persisted
    assert "base64" not in persisted
    assert url not in persisted
