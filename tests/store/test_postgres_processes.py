"""Two real `python bot.py` processes on one PostgreSQL database: a memory saved through
one is found by the next turn in the other, two processes serving one account say so in
their logs, and a message both receive is answered once and logged once — one account in
each, or one account connected to both — while a process that died holds it only until its
claims expire (store/message_claims.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from tests.fakes.bot_process import (
    SELF_ID,
    BotProcess,
    bot_process,
    group_event,
    log_tail,
    private_event,
)
from tests.fakes.openai_server import FakeOpenAI, held, text, tool_calls

LOWER, HIGHER = 10001, 10002
NICKNAME_CALL = "小忆，在吗"
LOGGED_CALL = "在吗"  # NoneBot takes the nickname off
# Long enough for a first turn in a fresh process (it loads the tokenizer).
TURN_SECONDS = 10.0
# How long a process that does not answer is watched after the other one did: beyond the
# wait of a higher account for a lower one (2 s).
QUIET_SECONDS = 3.0
HELD_WATCH_SECONDS = 3.0


def folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


def said(words: str) -> list[dict[str, Any]]:
    return [{"type": "text", "data": {"text": words}}]


def sent_texts(sent: list[dict[str, Any]]) -> list[str]:
    return [
        "".join(segment["data"].get("text", "") for segment in params["message"]) for params in sent
    ]


def chat_log(url: str) -> list[tuple[str, str, str]]:
    """The chat log both processes wrote, once they stopped (and flushed)."""
    import psycopg

    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT role, speaker_id, text FROM aimemory.chat_log ORDER BY id"
        ).fetchall()
    return [tuple(row) for row in rows]


def settings(postgres_url: str, **more: str) -> dict[str, str]:
    return {"AIMEMORY_DATABASE_URL": postgres_url, "NICKNAME": '["小忆"]', **more}


async def answers_of_both(first: BotProcess, second: BotProcess) -> tuple[list[str], list[str]]:
    """What each process sent: once one answered, the other is watched QUIET_SECONDS more."""
    watching = [
        asyncio.create_task(bot.sends_within(TURN_SECONDS, expected=1)) for bot in (first, second)
    ]
    _, still = await asyncio.wait(watching, return_when=asyncio.FIRST_COMPLETED)
    if still:
        await asyncio.wait(still, timeout=QUIET_SECONDS)
    for task in still:
        task.cancel()
    await asyncio.gather(*still, return_exceptions=True)
    first_sent, second_sent = (
        task.result() if task.done() and not task.cancelled() else [] for task in watching
    )
    return sent_texts(first_sent), sent_texts(second_sent)


async def test_two_processes_share_what_they_remember(
    tmp_path: Path, llm: FakeOpenAI, postgres_url: str
) -> None:
    first_dir, second_dir = folder(tmp_path, "first"), folder(tmp_path, "second")
    llm.script(
        tool_calls(("memory_save", {"content": "小明喜欢周末爬山"})),
        text("记住了"),
        tool_calls(("memory_search", {"query": "爬山"})),
        text("你喜欢周末爬山"),
    )
    settings = {"AIMEMORY_DATABASE_URL": postgres_url}
    async with bot_process(first_dir, llm, **settings) as first:
        async with bot_process(second_dir, llm, **settings) as second:
            await first.ws.send(private_event(1, 3001, "记住我喜欢周末爬山"))
            assert (await first.next_send(answer=True))["message"][-1]["data"]["text"] == "记住了"
            await second.ws.send(private_event(2, 3001, "我喜欢干什么"))
            answer = await second.next_send(answer=True)
            logs = log_tail(first.log_path, 50_000) + log_tail(second.log_path, 50_000)
            await second.stop()
        await first.stop()

    assert answer["message"][-1]["data"]["text"] == "你喜欢周末爬山"
    found = llm.chat_requests[-1]["messages"][-1]
    assert found["role"] == "tool"
    assert "小明喜欢周末爬山" in found["content"]
    # Both processes answer as the same account: the later one logs it.
    assert "is also served by another process" in logs
    assert postgres_url.split(":")[2].split("@")[0] not in logs  # no password in any log


async def test_a_nickname_call_two_processes_receive_is_answered_and_logged_once(
    tmp_path: Path, llm: FakeOpenAI, postgres_url: str
) -> None:
    llm.script(text("在的"), text("多余的回答"))
    first_dir, second_dir = folder(tmp_path, "first"), folder(tmp_path, "second")
    async with (
        bot_process(first_dir, llm, self_id=LOWER, **settings(postgres_url)) as first,
        bot_process(second_dir, llm, self_id=HIGHER, **settings(postgres_url)) as second,
    ):
        # Both accounts are seen in the group, then both receive the call (each with an id
        # of its own).
        for bot, account in ((first, LOWER), (second, HIGHER)):
            await bot.ws.send(group_event(account, said("大家好"), self_id=account))
        await asyncio.sleep(1.0)
        sent_at = int(time.time())
        for bot, account in ((second, HIGHER), (first, LOWER)):
            call = group_event(account + 1, said(NICKNAME_CALL), self_id=account, sent_at=sent_at)
            await bot.ws.send(call)
        answers = await answers_of_both(first, second)
        await second.stop()
        await first.stop()

    assert answers == (["在的"], [])  # the lower account's, although its copy came second
    assert llm.pending == 1
    assert chat_log(postgres_url) == [
        ("user", "2001", LOGGED_CALL),
        ("assistant", str(LOWER), "在的"),
    ]


async def test_one_account_in_two_processes_answers_a_message_once(
    tmp_path: Path, llm: FakeOpenAI, postgres_url: str
) -> None:
    llm.script(text("在的"), text("多余的回答"))
    first_dir, second_dir = folder(tmp_path, "first"), folder(tmp_path, "second")
    async with (
        bot_process(first_dir, llm, **settings(postgres_url)) as first,
        bot_process(second_dir, llm, **settings(postgres_url)) as second,
    ):
        call = group_event(3, said(NICKNAME_CALL))  # one copy, delivered to both
        await first.ws.send(call)
        await second.ws.send(call)
        first_sent, second_sent = await answers_of_both(first, second)
        await second.stop()
        await first.stop()

    assert sorted(first_sent + second_sent) == ["在的"]
    assert llm.pending == 1
    assert chat_log(postgres_url) == [
        ("user", "2001", LOGGED_CALL),
        ("assistant", str(SELF_ID), "在的"),
    ]


async def test_the_claim_of_a_process_that_died_expires(
    tmp_path: Path, llm: FakeOpenAI, postgres_url: str
) -> None:
    from nonebot_plugin_aimemory.store.message_claims import HOLDER_EXPIRY_SECONDS

    never = threading.Event()  # the first process dies waiting for its answer
    llm.script(held(never, text("发不出去了")), text("我来回答"))
    first_dir, second_dir = folder(tmp_path, "first"), folder(tmp_path, "second")
    # The first process's chat-log row waits in its queue and dies with it.
    first_settings = settings(postgres_url, AIMEMORY_CHAT_LOG_FLUSH_SECONDS="60")
    try:
        async with (
            bot_process(first_dir, llm, **first_settings) as first,
            bot_process(second_dir, llm, **settings(postgres_url)) as second,
        ):
            call = group_event(4, said(NICKNAME_CALL))
            await first.ws.send(call)
            await until_asked(llm, remaining=1)
            await first.kill()
            # Delivered again: held by the dead process until its claims expire, then taken.
            await second.ws.send(call)
            while_held = await second.sends_within(HELD_WATCH_SECONDS)
            await asyncio.sleep(HOLDER_EXPIRY_SECONDS - HELD_WATCH_SECONDS + 1.0)
            await second.ws.send(call)
            after_expiry = await second.sends_within(TURN_SECONDS, expected=1)
            await second.stop()
    finally:
        never.set()

    assert while_held == []
    assert sent_texts(after_expiry) == ["我来回答"]
    assert chat_log(postgres_url) == [
        ("user", "2001", LOGGED_CALL),
        ("assistant", str(SELF_ID), "我来回答"),
    ]


async def until_asked(llm: FakeOpenAI, *, remaining: int, timeout: float = 20.0) -> None:
    """Wait until the model server took its scripted replies down to `remaining`."""
    deadline = asyncio.get_running_loop().time() + timeout
    while llm.pending > remaining:
        assert asyncio.get_running_loop().time() < deadline, "the model was never asked"
        await asyncio.sleep(0.05)
