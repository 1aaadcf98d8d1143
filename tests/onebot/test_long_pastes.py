"""Long pastes: a message over 8 000 characters is cut before it goes anywhere (model,
chat log, history), and ends with "…（以下省略 N 字）" so the model knows there was more."""

from __future__ import annotations

import hashlib
import json
import re

from nonebot.adapters.onebot.v11 import MessageSegment

from tests.chatlog.helpers import GROUP, logged, said, said_privately
from tests.fakes.image_server import ImageServer, png_bytes
from tests.fakes.qq import QQBot, content, everything_persisted, qq_image, restart_with_vision
from tests.fakes.qq import user_line as model_user_line

MAX_PASTE_CHARS = 8000
KEPT = "甲" * MAX_PASTE_CHARS
# What lies past the limit: never seen by the model, never stored.
BEYOND = "乙" * 92_000
PASTE = KEPT + BEYOND


def note(cut_chars: int) -> str:
    return f"…（以下省略 {cut_chars} 字）"


async def test_a_long_addressed_paste_reaches_the_model_cut_with_a_note(plugin, qq: QQBot) -> None:
    await qq.receive(said(PASTE, to_me=True))

    line = model_user_line(plugin.llm)
    assert line.endswith("：" + KEPT + note(len(BEYOND)))
    assert "乙" not in json.dumps(plugin.llm.chat_requests, ensure_ascii=False)
    assert qq.sent_texts == ["好的"]


async def test_a_long_addressed_paste_is_logged_and_stored_cut(plugin, qq: QQBot) -> None:
    await qq.receive(said(PASTE, to_me=True))
    await plugin.runtime.chat_log.flush()

    user_row = (await logged(plugin))[0]
    assert user_row.text == KEPT + note(len(BEYOND))
    assert "乙" not in await everything_persisted(plugin)


async def test_a_long_unaddressed_paste_is_logged_cut(plugin, qq: QQBot) -> None:
    await plugin.restart(aimemory_chat_log_ambient=True)

    await qq.receive(said(PASTE, to_me=False))
    await plugin.runtime.chat_log.flush()

    rows = await logged(plugin, GROUP)
    assert [(row.text, row.addressed) for row in rows] == [(KEPT + note(len(BEYOND)), False)]
    assert plugin.llm.chat_requests == []


async def test_a_long_private_paste_is_cut_too(plugin, qq: QQBot) -> None:
    await qq.receive(said_privately(PASTE))

    assert model_user_line(plugin.llm).endswith(KEPT + note(len(BEYOND)))


async def test_a_paste_at_the_limit_is_kept_whole(plugin, qq: QQBot) -> None:
    await qq.receive(said(KEPT, to_me=True))

    line = model_user_line(plugin.llm)
    assert line.endswith("：" + KEPT)
    assert "以下省略" not in line


async def test_an_image_past_the_limit_is_never_downloaded_and_counts_as_its_marker(
    plugin, qq: QQBot, images: ImageServer
) -> None:
    await restart_with_vision(plugin)
    url = images.add_image("download/late.png", png_bytes())
    picture = qq_image(url, file="late.png")
    marker = f"[图片 {hashlib.sha256(b'late.png').hexdigest()[:8]}]"

    await qq.receive(said(content(KEPT + "丙" * 1000, picture), to_me=True))

    line = model_user_line(plugin.llm)
    assert line.endswith(KEPT + note(1000 + len(marker)))
    assert images.hits("download/late.png") == 0


async def test_text_segments_after_a_marker_count_toward_the_limit(plugin, qq: QQBot) -> None:
    face = MessageSegment.face(14)  # "[表情:14]", 7 characters

    await qq.receive(said(content(face, "丁" * MAX_PASTE_CHARS), to_me=True))

    line = model_user_line(plugin.llm)
    kept = re.search(r"\[表情:14\](丁+)…（以下省略 (\d+) 字）$", line)
    assert kept is not None, line[-80:]
    assert (len(kept.group(1)), int(kept.group(2))) == (MAX_PASTE_CHARS - 7, 7)
