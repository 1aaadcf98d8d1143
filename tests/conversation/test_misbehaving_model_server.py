"""A misbehaving model server, end to end: events in through NoneBot, the plugin's real
runtime calling a raw-socket server on 127.0.0.1. One group never gets another's answer,
and an answer past the cap gets the usual notice while the chat keeps working."""

from __future__ import annotations

import asyncio
import json
import zlib

from tests.engine.test_http_answers import completion_json, ok, read_request, serving
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message

MIB = 1024 * 1024


def asked(body: bytes) -> str:
    """The newest user message of a chat request (the speaker line's text)."""
    user = [m for m in json.loads(body)["messages"] if m["role"] == "user"][-1]
    return str(user["content"]).rsplit("：", 1)[-1]


async def answer_with_a_stray(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, served
) -> None:
    """Each request gets its own answer, followed in the same write by one nobody asked
    for, on a connection kept open for more."""
    while True:
        question = asked(await read_request(reader, served))
        real = ok(completion_json(f"答：{question}"), b"Connection: keep-alive")
        stray = ok(completion_json("别的群的回答"), b"Connection: keep-alive")
        writer.write(real + stray)
        await writer.drain()


async def test_a_group_never_receives_the_answer_meant_for_another(plugin) -> None:
    async with serving(answer_with_a_stray) as served:
        await plugin.restart(aimemory_api_base=served.base_url)
        bot = RecordingBot()
        for group_id, question in [(111, "甲群的问题"), (222, "乙群的问题"), (111, "甲群又问")]:
            await bot.receive(group_message(question, group_id=group_id, to_me=True))
    assert bot.sent_texts == ["答：甲群的问题", "答：乙群的问题", "答：甲群又问"]


def gzip_of_zeros(inflated_bytes: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [compressor.compress(bytes(MIB)) for _ in range(inflated_bytes // MIB)]
    return b"".join([*parts, compressor.flush()])


async def test_an_answer_past_the_cap_gets_the_notice_and_the_chat_goes_on(plugin) -> None:
    from nonebot_plugin_aimemory import texts

    bomb = ok(gzip_of_zeros(32 * MIB), b"Content-Encoding: gzip")
    answers = iter([bomb, ok(completion_json("好的，这次正常"))])

    async def bomb_then_normal(reader, writer, served) -> None:
        await read_request(reader, served)
        writer.write(next(answers))
        await writer.drain()

    async with serving(bomb_then_normal) as served:
        await plugin.restart(aimemory_api_base=served.base_url)
        bot = RecordingBot()
        await bot.receive(group_message("你好", to_me=True))
        await bot.receive(group_message("还在吗", to_me=True))
    assert bot.sent_texts == [texts.LLM_UNAVAILABLE, "好的，这次正常"]
    assert served.connections == 2  # an answer past the cap is not asked for again
