"""Images that cannot be read: a failing vision model, a failing download, an oversize
picture, or no way to look at images at all. Each leaves a marker and the chat goes on."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from tests.fakes.events import private_message
from tests.fakes.image_server import ImageServer, gzip_bomb, png_bytes
from tests.fakes.openai_server import delay, error, raw, text
from tests.fakes.qq import (
    DESCRIPTION,
    QQBot,
    content,
    describing,
    qq_image,
    restart_with_vision,
    short_hash,
    user_line,
    vision_requests,
)

PNG = png_bytes()
MAX_BYTES = 4096
OVERSIZE_BYTES = 32 * 1024 * 1024  # far more than loopback socket buffers can hold
UNRECOGNISED = re.compile(r"\[图片 [0-9a-f]{8}：无法识别\]")


async def start_reading_images(plugin, mode: str, **overrides: Any) -> None:
    """Restart so images are downloaded: for a multimodal model or for the vision model."""
    if mode == "multimodal":
        await plugin.restart(aimemory_multimodal=True, **overrides)
    else:
        await restart_with_vision(plugin, **overrides)


@pytest.mark.parametrize(
    "failure",
    [error(500, "vision backend exploded"), raw(200, b"<html>bad gateway</html>", "text/html")],
    ids=["http-500", "garbage"],
)
async def test_failing_vision_model_leaves_an_unrecognised_marker(
    plugin, qq: QQBot, images: ImageServer, failure
) -> None:
    await restart_with_vision(plugin)
    plugin.llm.responder = describing(failure)
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert user_line(plugin.llm).endswith(f"这是什么[图片 {short_hash(PNG)}：无法识别]")
    assert vision_requests(plugin.llm)
    assert qq.sent_texts == ["好的"]


async def test_unexpected_vision_error_leaves_an_unrecognised_marker(
    plugin, qq: QQBot, images: ImageServer, monkeypatch
) -> None:
    runtime = await restart_with_vision(plugin)
    vision = runtime.images.vision

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("not an LLMError")

    monkeypatch.setattr(vision, "complete", broken)
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert user_line(plugin.llm).endswith(f"这是什么[图片 {short_hash(PNG)}：无法识别]")
    assert qq.sent_texts == ["好的"]


async def test_hung_vision_model_is_abandoned_after_the_vision_timeout(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    runtime = await restart_with_vision(plugin)
    runtime.images.vision_timeout_seconds = 0.3
    plugin.llm.responder = describing(delay(3, text(DESCRIPTION)))
    url = images.add_image("download/cat.png", PNG)
    loop = asyncio.get_running_loop()
    started = loop.time()

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert loop.time() - started < 1.5
    assert user_line(plugin.llm).endswith(f"这是什么[图片 {short_hash(PNG)}：无法识别]")
    assert qq.sent_texts == ["好的"]


@pytest.mark.parametrize("mode", ["multimodal", "vision"])
@pytest.mark.parametrize("failure", ["not-found", "not-an-image", "timeout"])
async def test_failed_download_leaves_an_unrecognised_marker(
    plugin, qq: QQBot, images: ImageServer, monkeypatch, mode: str, failure: str
) -> None:
    from nonebot_plugin_aimemory.media import images as media

    await start_reading_images(plugin, mode)
    if failure == "not-found":
        url = images.add_status("download/gone.png", 404)
    elif failure == "not-an-image":
        url = images.add_body("download/gone.png", b"<html>QQ login required</html>")
    else:
        monkeypatch.setattr(media, "DOWNLOAD_TIMEOUT_SECONDS", 0.3)
        url = images.add_slow("download/gone.png", PNG, delay_seconds=10)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert re.search(r"这是什么\[图片 [0-9a-f]{8}：无法识别\]$", user_line(plugin.llm))
    assert vision_requests(plugin.llm) == []
    assert qq.sent_texts == ["好的"]


async def test_download_trickling_past_the_timeout_is_abandoned(
    plugin, qq: QQBot, images: ImageServer, monkeypatch
) -> None:
    from nonebot_plugin_aimemory.media import images as media

    # Every byte arrives well within the timeout; the whole image takes over 2 s.
    monkeypatch.setattr(media, "DOWNLOAD_TIMEOUT_SECONDS", 0.3)
    await restart_with_vision(plugin)
    url = images.add_trickle("download/slow.png", PNG, byte_interval_seconds=0.03)
    loop = asyncio.get_running_loop()
    started = loop.time()

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert loop.time() - started < 1.5
    assert UNRECOGNISED.search(user_line(plugin.llm))
    assert qq.sent_texts == ["好的"]


@pytest.mark.parametrize("mode", ["multimodal", "vision"])
@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "streamed"])
async def test_oversize_image_is_unrecognised_and_the_chat_goes_on(
    plugin, qq: QQBot, images: ImageServer, mode: str, declare_length: bool
) -> None:
    await start_reading_images(plugin, mode, aimemory_image_max_bytes=MAX_BYTES)
    url = images.add_oversize("download/huge.png", OVERSIZE_BYTES, declare_length=declare_length)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    line = user_line(plugin.llm)
    assert re.search(r"这是什么\[图片 [0-9a-f]{8}：无法识别\]$", line), line
    assert "base64" not in str(plugin.llm.chat_requests)
    assert vision_requests(plugin.llm) == []
    assert qq.sent_texts == ["好的"]


@pytest.mark.parametrize("mode", ["multimodal", "vision"])
async def test_gzip_bomb_image_is_unrecognised_and_the_chat_goes_on(
    plugin, qq: QQBot, images: ImageServer, mode: str
) -> None:
    await start_reading_images(plugin, mode, aimemory_image_max_bytes=MAX_BYTES)
    # About 32 KB on the wire, 32 MB once inflated.
    url = images.add_encoded("download/bomb.png", gzip_bomb(OVERSIZE_BYTES), "gzip")

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert UNRECOGNISED.search(user_line(plugin.llm))
    assert "base64" not in str(plugin.llm.chat_requests)
    assert vision_requests(plugin.llm) == []
    assert qq.sent_texts == ["好的"]


async def test_oversize_download_stops_before_the_whole_body_is_sent(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await start_reading_images(plugin, "vision", aimemory_image_max_bytes=MAX_BYTES)
    url = images.add_oversize("download/huge.png", OVERSIZE_BYTES, declare_length=False)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    (served,) = images.served("download/huge.png")
    assert served.wait_finished(timeout=5)
    assert not served.completed
    assert served.body_bytes_sent < served.body_bytes_total


async def test_without_vision_model_or_multimodal_nothing_is_downloaded(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    url = images.add_image("download/cat.png", PNG)

    await qq.receive(private_message(content("这是什么", qq_image(url))))

    assert images.requests == []
    assert re.search(r"这是什么\[图片 [0-9a-f]{8}\]$", user_line(plugin.llm))
    assert qq.sent_texts == ["好的"]
