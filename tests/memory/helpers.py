"""Shared steps of the long-term memory tests: the model calling memory tools through the
fake LLM, a person typing a command, and reading what the database holds."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import TYPE_CHECKING, Any

from nonebot.adapters.onebot.v11 import MessageEvent

from tests.fakes.bots import RecordingBot
from tests.fakes.openai_server import text, tool_calls

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.tools import ToolText
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

_SAVED_ID = re.compile(r"^已保存记忆 #([0-9a-z]+) ")

# What the model says after its tool round (no acknowledgement: that is no answer).
AFTER_TOOLS = "我查了一下。"


async def model_calls(
    plugin, bot: RecordingBot, event: MessageEvent, *calls: tuple[str, dict[str, Any]]
) -> list[str]:
    """The model answers `event` by calling `calls` in one round, then says 我查了一下; returns
    the tool results it was shown, in call order."""
    plugin.llm.script(tool_calls(*calls), text(AFTER_TOOLS))
    await bot.receive(event)
    messages = plugin.llm.last_messages()
    results = [m for m in messages[-len(calls) :] if m["role"] == "tool"]
    assert len(results) == len(calls), messages[-len(calls) - 1 :]
    return [m["content"] for m in results]


async def model_calls_one(
    plugin, bot: RecordingBot, event: MessageEvent, name: str, arguments: dict[str, Any]
) -> str:
    (result,) = await model_calls(plugin, bot, event, (name, arguments))
    return result


def saved_id(result: str) -> str:
    """The id in a memory_save result that says the memory was saved."""
    match = _SAVED_ID.match(result)
    assert match, f"not a saved result: {result!r}"
    return match.group(1)


async def command(bot: RecordingBot, event: MessageEvent) -> str:
    """A person sends a command; returns the bot's one-line answer."""
    before = len(bot.sent)
    await bot.receive(event)
    assert len(bot.sent) == before + 1, bot.sent_texts[before:]
    return bot.sent_texts[-1]


async def stored(plugin, scope: str, *, deleted: bool = False) -> list[MemoryRecord]:
    """Memories of `scope` as the database holds them, oldest first (live ones unless
    `deleted`)."""
    records = await plugin.runtime.memory.service.store.load_scope(scope)
    records.sort(key=lambda r: (r.created_at, r.id))
    return [r for r in records if r.deleted == deleted]


async def stored_bodies(plugin, session_key: str) -> list[dict[str, Any]]:
    """The persisted conversation window of a session, as API JSON."""
    rows = await plugin.runtime.database.read(
        "SELECT body FROM messages WHERE session_key = ? ORDER BY seq", (session_key,)
    )
    return [json.loads(body) for (body,) in rows]


async def wait_for(check, timeout_seconds: float = 2.0) -> bool:
    """Wait until the async `check()` is true (background work of the runtime); False if it
    still is not after `timeout_seconds`."""
    deadline = time.monotonic() + timeout_seconds
    while not await check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def read_result(result: str | ToolText) -> str:
    """A tool handler's result as the turn's request carries it."""
    return result if isinstance(result, str) else result.text


def told_today(plugin, name: str, user_id: object) -> str:
    """How a memory a member told the bot today is shown after its line:
    `（小明(2001) 说，12-06）` (their QQ number alone when they have no name)."""
    from datetime import datetime

    zone = plugin.runtime.memory.service.zone
    who = f"{name}({user_id})" if name else str(user_id)
    return f"（{who} 说，{datetime.now(zone):%m-%d}）"
