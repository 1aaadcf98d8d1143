"""Images without multimodal input: a vision model describes each distinct picture once
(cached by content hash, across restarts) and the description goes into the text."""

from __future__ import annotations

import hashlib
import json

from tests.fakes.events import group_message, private_message
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.qq import (
    DESCRIPTION,
    QQBot,
    content,
    data_uri,
    everything_persisted,
    image_urls,
    main_requests,
    qq_image,
    restart_with_vision,
    short_hash,
    stored_bodies,
    user_line,
    vision_requests,
)

PNG = png_bytes()
OTHER_PNG = png_bytes(rgb=(0, 90, 200))


async def test_description_is_put_into_the_text(plugin, qq: QQBot, images: ImageServer) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert user_line(plugin.llm).endswith(f"这是什么[图片 {short_hash(PNG)}：{DESCRIPTION}]")
    assert all(not image_urls(m) for m in main_requests(plugin.llm)[-1]["messages"])
    assert qq.sent_texts == ["好的"]


async def test_vision_model_is_sent_the_image_as_a_data_uri(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    (request,) = vision_requests(plugin.llm)
    assert image_urls(request["messages"][-1]) == [data_uri(PNG)]


async def test_history_keeps_the_marker_with_the_description(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    user_body = (await stored_bodies(plugin, "f:3001"))[0]
    assert user_body["content"].endswith(f"[图片 {short_hash(PNG)}：{DESCRIPTION}]")
    assert "127.0.0.1" not in json.dumps(user_body)


async def test_the_same_image_sent_twice_is_described_once(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))
    await qq.receive(private_message(content("再看一次", qq_image(url))))

    assert len(vision_requests(plugin.llm)) == 1
    assert user_line(plugin.llm).endswith(f"再看一次[图片 {short_hash(PNG)}：{DESCRIPTION}]")


async def test_the_same_picture_from_two_users_is_described_once(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    first = images.add_image("download/a1.png", PNG)
    second = images.add_image("download/b2.png", PNG)

    await qq.receive(group_message(qq_image(first, "A1.png"), user_id=2001, to_me=True))
    await qq.receive(group_message(qq_image(second, "B2.png"), user_id=2002, to_me=True))

    assert len(vision_requests(plugin.llm)) == 1
    assert user_line(plugin.llm).endswith(f"[图片 {short_hash(PNG)}：{DESCRIPTION}]")


async def test_two_different_pictures_are_described_separately(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    orange = images.add_image("download/orange.png", PNG)
    blue = images.add_image("download/blue.png", OTHER_PNG)

    await qq.receive(private_message(content(qq_image(orange, "O.png"), qq_image(blue, "B.png"))))

    assert len(vision_requests(plugin.llm)) == 2
    line = user_line(plugin.llm)
    assert f"[图片 {short_hash(PNG)}：{DESCRIPTION}]" in line
    assert f"[图片 {short_hash(OTHER_PNG)}：{DESCRIPTION}]" in line


async def test_description_cache_survives_a_restart(plugin, qq: QQBot, images: ImageServer) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", PNG)
    await qq.receive(private_message(content("这是什么", qq_image(url))))

    await restart_with_vision(plugin)
    await qq.receive(private_message(content("又是它", qq_image(url)), user_id=3002))

    assert len(vision_requests(plugin.llm)) == 1
    assert user_line(plugin.llm).endswith(f"又是它[图片 {short_hash(PNG)}：{DESCRIPTION}]")


async def test_description_cache_is_keyed_by_the_full_content_hash(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    # Given a cached description under the 8-hex short hash only (another picture whose
    # short hash collides, or a row from before the cache used full hashes).
    runtime = await restart_with_vision(plugin)
    cache = runtime.images.cache
    await cache.put(short_hash(PNG), "另一张图：一片海")
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert len(vision_requests(plugin.llm)) == 1
    assert user_line(plugin.llm).endswith(f"这是什么[图片 {short_hash(PNG)}：{DESCRIPTION}]")
    assert await cache.get(hashlib.sha256(PNG).hexdigest()) == DESCRIPTION


async def test_after_a_restart_history_holds_only_the_described_marker(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", PNG)
    await qq.receive(private_message(content("这是什么", qq_image(url))))

    await plugin.restart()
    await qq.receive(private_message("还记得那张图吗"))

    request = main_requests(plugin.llm)[-1]
    described = f"[图片 {short_hash(PNG)}：{DESCRIPTION}]"
    assert request["messages"][1]["content"].endswith(f"这是什么{described}")
    assert all(not image_urls(message) for message in request["messages"])
    persisted = await everything_persisted(plugin)
    assert described in persisted
    assert url not in persisted
    assert "127.0.0.1" not in persisted
    assert "base64" not in persisted
    assert "data:" not in persisted
