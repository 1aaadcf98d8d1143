"""Where the images QQ users send are downloaded from: the address their host was checked
at (resolved once), never through a proxy of the environment, and only from public hosts
when the reader is told so."""

from __future__ import annotations

import re

from tests.fakes.events import private_message
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.network import (
    Connection,
    RecordingTransport,
    ScriptedResolver,
    proxies_to_a_closed_port,
)
from tests.fakes.qq import (
    DESCRIPTION,
    QQBot,
    content,
    qq_image,
    restart_with_vision,
    short_hash,
    user_line,
    vision_requests,
)

PNG = png_bytes()


async def test_incoming_image_host_is_resolved_once_and_fetched_from_the_checked_address(
    plugin, qq: QQBot
) -> None:
    from nonebot_plugin_aimemory.media.fetch import SafeFetcher

    runtime = await restart_with_vision(plugin)
    runtime.images.public_only = True
    resolver = ScriptedResolver({"multimedia.test": [["183.3.226.35"], ["127.0.0.1"]]})
    transport = RecordingTransport(body=PNG)
    runtime.images.fetcher = SafeFetcher(resolver=resolver, transport=transport)

    await qq.receive(
        private_message(content("这是什么", qq_image("https://multimedia.test/download?id=1")))
    )

    assert user_line(plugin.llm).endswith(f"[图片 {short_hash(PNG)}：{DESCRIPTION}]")
    assert resolver.lookups == ["multimedia.test"]
    assert transport.connections == [
        Connection("https", "183.3.226.35", "multimedia.test", "multimedia.test")
    ]


async def test_incoming_image_on_the_bots_network_is_not_downloaded_when_only_public_allowed(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    runtime = await restart_with_vision(plugin)
    runtime.images.public_only = True
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert re.search(r"这是什么\[图片 [0-9a-f]{8}：无法识别\]$", user_line(plugin.llm))
    assert images.requests == []
    assert vision_requests(plugin.llm) == []
    assert qq.sent_texts == ["好的"]


async def test_incoming_image_is_downloaded_directly_past_a_dead_proxy_of_the_environment(
    plugin, qq: QQBot, images: ImageServer, monkeypatch
) -> None:
    # The proxy is dead; the models, on `localhost`, are exempt, the image host is not.
    proxies_to_a_closed_port(monkeypatch, no_proxy="localhost")
    await restart_with_vision(
        plugin, aimemory_api_base=plugin.llm.base_url.replace("127.0.0.1", "localhost")
    )
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert user_line(plugin.llm).endswith(f"这是什么[图片 {short_hash(PNG)}：{DESCRIPTION}]")
    assert images.hits("download/cat.png") == 1
