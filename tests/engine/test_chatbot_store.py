"""`ChatBot.turn` and its store, a real SQLite file: a turn returns only once its messages
are committed; when they cannot be (another program holds the file's lock), the turn fails
with nothing of it stored, the window keeps what a transient failure keeps, and the next
write stores the whole window."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.engine.conftest import KEY
from tests.fakes.openai_server import FakeOpenAI, text, tool_calls

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.llm import LLMClient
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tools import Tool
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore
    from nonebot_plugin_aimemory.store.sqlite.database import Database

    MakeBot = Callable[..., ChatBot]


@contextmanager
def locked(db_path: Path) -> Iterator[None]:
    """Another program holding the file's write lock (reads still work: WAL)."""
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        locker.execute("ROLLBACK")
        locker.close()


def rows_seen_from_outside(db_path: Path) -> list[str]:
    """The roles of the stored window as another connection (another process) sees it."""
    with sqlite3.connect(db_path) as outside:
        rows = outside.execute(
            "SELECT role FROM messages WHERE session_key = ? ORDER BY seq", (KEY,)
        ).fetchall()
    return [role for (role,) in rows]


def lookup_tool() -> Tool:
    from nonebot_plugin_aimemory.engine.tools import Tool

    async def look_up(arguments: dict[str, Any]) -> str:
        return "资料"

    parameters = {"type": "object", "properties": {"q": {"type": "string"}}}
    return Tool("look_up", "查资料", look_up, parameters)


def roles(messages: Sequence[Message]) -> list[str]:
    return [m.role for m in messages]


async def test_a_turn_is_committed_when_it_returns(
    llm: FakeOpenAI, make_bot: MakeBot, db_path: Path
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(tool_calls(("look_up", {"q": "一"})), text("查到了"))
    bot = make_bot(tools=[lookup_tool()])

    await bot.turn(user("帮我查查"))

    assert rows_seen_from_outside(db_path) == ["user", "assistant", "tool", "assistant"]


async def test_an_answer_that_cannot_be_stored_fails_the_turn_and_is_not_kept(
    llm: FakeOpenAI, make_bot: MakeBot, db_path: Path
) -> None:
    from nonebot_plugin_aimemory.engine.history import StoreError
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(text("你好"))
    bot = make_bot()
    with locked(db_path), pytest.raises(StoreError) as raised:
        await bot.turn(user("在吗"))

    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert rows_seen_from_outside(db_path) == []  # rolled back: nothing half-written
    assert bot.window.messages == [user("在吗")]  # as after a transient failure


async def test_a_tool_turn_that_cannot_be_stored_keeps_its_rounds_but_not_its_answer(
    llm: FakeOpenAI, make_bot: MakeBot, db_path: Path
) -> None:
    from nonebot_plugin_aimemory.engine.history import StoreError
    from nonebot_plugin_aimemory.engine.messages import user

    llm.script(tool_calls(("look_up", {"q": "一"})), text("查到了"))
    bot = make_bot(tools=[lookup_tool()])
    with locked(db_path), pytest.raises(StoreError):
        await bot.turn(user("帮我查查"))

    assert rows_seen_from_outside(db_path) == []
    assert roles(bot.window.messages) == ["user", "assistant", "tool"]


async def test_the_turn_after_a_store_failure_stores_the_whole_window(
    llm: FakeOpenAI, make_bot: MakeBot, db_path: Path, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.history import StoreError
    from nonebot_plugin_aimemory.engine.messages import user

    # given a turn whose answer could not be stored
    llm.script(text("第一次回答"))
    bot = make_bot()
    with locked(db_path), pytest.raises(StoreError):
        await bot.turn(user("第一句"))
    # when the next one can be
    llm.script(text("两句都收到了"))
    result = await bot.turn(user("第二句"))
    # then it was asked with both sentences (a valid history), and the store holds the window
    assert result.reply == "两句都收到了"
    assert llm.last_messages()[1:] == [{"role": "user", "content": "第一句\n第二句"}]
    assert await store.load(KEY) == bot.window.messages
    assert roles(bot.window.messages) == ["user", "user", "assistant"]


async def test_a_turn_stopped_while_its_commit_waits_is_kept_and_stored_with_the_next(
    llm: FakeOpenAI, llm_client: LLMClient, db_path: Path, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.chatbot import ChatBot
    from nonebot_plugin_aimemory.engine.messages import user
    from nonebot_plugin_aimemory.engine.tokens import EstimatingCounter
    from nonebot_plugin_aimemory.store.history_store import DatabaseHistoryStore

    class TellingStore(DatabaseHistoryStore):
        def __init__(self, database: Database) -> None:
            super().__init__(database)
            self.appending = asyncio.Event()

        async def append(self, key: str, messages: Sequence[Message]) -> None:
            self.appending.set()
            await super().append(key, messages)

    # given a turn whose commit waits for the lock
    llm.script(text("答一"))
    telling = TellingStore(store.database)
    bot = ChatBot(KEY, llm=llm_client, store=telling, counter=EstimatingCounter(), system_prompt="")
    with locked(db_path):
        task = asyncio.create_task(bot.turn(user("问一")))
        await asyncio.wait_for(telling.appending.wait(), 5)
        # when it is cancelled then
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await telling.load(KEY)  # after the write, which ran on (and failed)
    # then the window keeps the turn whole, committed or not, and the next turn stores it
    assert roles(bot.window.messages) == ["user", "assistant"]
    llm.script(text("答二"))
    await bot.turn(user("问二"))
    assert await telling.load(KEY) == bot.window.messages
    assert roles(bot.window.messages) == ["user", "assistant", "user", "assistant"]


async def test_a_clear_the_store_missed_is_caught_up_by_the_next_turn(
    llm: FakeOpenAI, make_bot: MakeBot, db_path: Path, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.history import StoreError
    from nonebot_plugin_aimemory.engine.messages import assistant, user

    llm.script(text("旧的回答"))
    bot = make_bot()
    await bot.turn(user("旧的问题"))
    with locked(db_path), pytest.raises(StoreError):
        await bot.clear()

    llm.script(text("新的回答"))
    await bot.turn(user("新的问题"))

    assert await store.load(KEY) == [user("新的问题"), assistant("新的回答")]


async def test_a_message_kept_unanswered_that_cannot_be_stored_stays_in_memory(
    llm: FakeOpenAI, make_bot: MakeBot, db_path: Path, store: DatabaseHistoryStore
) -> None:
    from nonebot_plugin_aimemory.engine.messages import user

    bot = make_bot()
    with locked(db_path):
        await bot.keep_unanswered(user("关机前的一句"))  # logged, not raised

    assert bot.window.messages == [user("关机前的一句")]
    llm.script(text("收到"))
    await bot.turn(user("开机后的一句"))
    assert await store.load(KEY) == bot.window.messages
