"""Durable before acknowledged: a reply goes out only once its turn (the user's message, the
tool rounds, the answer) is committed. A bot killed the moment it sends a reply has the
whole turn on disk; a turn that cannot be stored gets the short notice instead of a reply,
leaves nothing half-written, and the chat goes on normally once the store is back."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakes.bot_process import bot_process, private_event
from tests.fakes.bots import RecordingBot
from tests.fakes.events import private_message
from tests.fakes.openai_server import FakeOpenAI, delay, text, tool_calls

# The plugin's busy timeout in these tests, instead of 5 s a try.
BUSY_TIMEOUT_IN_TESTS_MS = 200


def stored_turns(db_path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every stored window, read from the file by another connection (as after a crash)."""
    with sqlite3.connect(db_path) as outside:
        rows = outside.execute(
            "SELECT session_key, body FROM messages ORDER BY session_key, seq"
        ).fetchall()
    windows: dict[str, list[dict[str, Any]]] = {}
    for key, body in rows:
        windows.setdefault(key, []).append(json.loads(body))
    return windows


async def test_a_bot_killed_as_it_sends_a_reply_has_the_whole_turn_on_disk(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    # given a turn with a tool round before its answer
    llm.script(tool_calls(("memory_search", {"query": "名字"})), text("你好，小明！"))
    async with bot_process(tmp_path, llm) as bot:
        await bot.ws.send(private_event(1, 2001, "我叫小明"))
        # when the bot is killed (SIGKILL) the moment it asks for the reply to be sent
        sent = await bot.next_send()
        await bot.kill()
        log = bot.log_tail()
    # then the whole turn is in the file
    assert sent["message"][-1]["data"]["text"] == "你好，小明！"
    windows = stored_turns(tmp_path / "aimemory.db")
    assert len(windows) == 1, f"{windows}\n{log}"
    (window,) = windows.values()
    assert [m["role"] for m in window] == ["user", "assistant", "tool", "assistant"]
    assert "我叫小明" in window[0]["content"]
    assert window[1]["tool_calls"][0]["function"]["name"] == "memory_search"
    assert window[2]["tool_call_id"] == window[1]["tool_calls"][0]["id"]
    assert window[3]["content"] == "你好，小明！"


async def wait_until(condition: Callable[[], bool], timeout_seconds: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_a_turn_that_cannot_be_stored_gets_the_notice_and_leaves_nothing(
    plugin, plugin_log
) -> None:
    from nonebot_plugin_aimemory import texts

    # given a short busy timeout, and another program that takes the file's write lock
    # while the model answers
    await plugin.runtime.database.read(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_IN_TESTS_MS}")
    bot = RecordingBot()
    plugin.llm.script(delay(0.3, text("你好，阿福")))
    turn = asyncio.create_task(bot.receive(private_message("我叫阿福", user_id=61)))
    await wait_until(lambda: plugin.llm.pending == 0)  # the model is answering
    locker = sqlite3.connect(plugin.db_path, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        # when the answer is to be committed
        await turn
        # then the user gets the short notice, not the answer, and nothing of the turn
        # is stored
        assert bot.sent_texts == [texts.TURN_FAILED]
        assert stored_turns(Path(plugin.db_path)) == {}
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    # and the log says where and why
    logged = [r.getMessage() for r in plugin_log.records]
    assert any("f:61" in line and "database is locked" in line for line in logged), logged


async def test_after_a_turn_that_could_not_be_stored_the_next_one_is_answered_and_stored(
    plugin,
) -> None:
    from nonebot_plugin_aimemory import texts

    await plugin.runtime.database.read(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_IN_TESTS_MS}")
    bot = RecordingBot()
    locker = sqlite3.connect(plugin.db_path, isolation_level=None)
    plugin.llm.script(delay(0.3, text("你好，阿福")))
    turn = asyncio.create_task(bot.receive(private_message("我叫阿福", user_id=62)))
    await wait_until(lambda: plugin.llm.pending == 0)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        await turn
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    # when the lock is gone and the user writes again
    plugin.llm.script(text("你叫阿福"))
    await bot.receive(private_message("我叫什么？", user_id=62))
    # then the answer goes out, the request was a valid history (the fake server checks)
    # holding the earlier question but not the answer nobody saw, and the store holds
    # what the window holds
    assert bot.sent_texts == [texts.TURN_FAILED, "你叫阿福"]
    contents = [str(m["content"]) for m in plugin.llm.last_messages()]
    assert any("我叫阿福" in c for c in contents)
    assert "你好，阿福" not in contents
    session = plugin.runtime.sessions.get("f:62")
    assert session is not None
    window = session.bot.window.messages
    assert await plugin.runtime.history.load("f:62") == window
    assert [m.role for m in window] == ["user", "user", "assistant"]
    await plugin.restart()
    plugin.llm.script(text("记得"))
    await bot.receive(private_message("还记得吗", user_id=62))
    contents = [str(m["content"]) for m in plugin.llm.last_messages()]
    assert any("我叫阿福" in c for c in contents)
    assert "你叫阿福" in contents
