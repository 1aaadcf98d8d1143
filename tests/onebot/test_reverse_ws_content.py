"""Images through the real reverse WebSocket: the adapter parses the implementation's JSON
segments, and the same reading code turns them into model input."""

from __future__ import annotations

from nonebot.adapters.onebot.v11 import MessageSegment
from nonebug import App

from tests.conftest import ACCESS_TOKEN
from tests.fakes.events import SELF_ID, group_message
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.onebot_client import connect_onebot
from tests.fakes.qq import (
    DESCRIPTION,
    content,
    data_uri,
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


async def test_image_over_the_websocket_reaches_a_multimodal_model_as_a_data_uri(
    app: App, plugin, images: ImageServer
) -> None:
    await plugin.restart(aimemory_multimodal=True)
    url = images.add_image("download/cat.png", PNG) + "?appid=1407&fileid=EhQx&rkey=CAQS"
    event = group_message(content(MessageSegment.at(SELF_ID), " 看看这个", qq_image(url)))

    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        call = await onebot.next_send()

    assert call.params["message"][-1] == {"type": "text", "data": {"text": "好的"}}
    assert image_urls(main_requests(plugin.llm)[-1]["messages"][-1]) == [data_uri(PNG)]
    assert images.hits("download/cat.png") == 1
    stored = (await stored_bodies(plugin, f"g:{event.group_id}"))[0]["content"]
    assert stored.endswith(f"看看这个[图片 {short_hash(PNG)}]")


async def test_image_over_the_websocket_is_described_by_the_vision_model(
    app: App, plugin, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/cat.png", PNG)
    event = group_message(content(MessageSegment.at(SELF_ID), " 这是什么", qq_image(url)))

    async with connect_onebot(app, access_token=ACCESS_TOKEN) as onebot:
        await onebot.send_event(event)
        await onebot.next_send()

    assert len(vision_requests(plugin.llm)) == 1
    assert user_line(plugin.llm).endswith(f"这是什么[图片 {short_hash(PNG)}：{DESCRIPTION}]")
