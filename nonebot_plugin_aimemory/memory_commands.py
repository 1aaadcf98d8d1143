"""`~记忆` commands: people see, search, delete and restore what the bot remembers."""

from __future__ import annotations

import re

from nonebot import on_regex
from nonebot.adapters.onebot.v11 import Bot, MessageEvent
from nonebot.params import RegexGroup

from . import texts
from .memory import MemoryService
from .onebot import is_manager, send_parts, session_key_for
from .runtime import Runtime, current_runtime

PAGE_SIZE = 10
SEARCH_LIMIT = 10
MANAGER_ACTIONS = frozenset({"删除", "清空", "恢复"})

memory_command = on_regex(
    r"^\s*[~～/]记忆(?:\s+(\S+)(?:\s+(.*?))?)?\s*$", flags=re.DOTALL, priority=10, block=True
)


@memory_command.handle()
async def handle_memory(bot: Bot, event: MessageEvent, groups: tuple = RegexGroup()) -> None:
    runtime = current_runtime()
    if runtime is None:
        return
    action, argument = groups[0] or "", (groups[1] or "").strip()
    if runtime.memory is None:
        reply = texts.MEMORY_UNAVAILABLE
    elif action in MANAGER_ACTIONS and not await is_manager(bot, event):
        reply = texts.PERMISSION_DENIED
    else:
        reply = await run_memory_action(
            runtime, runtime.memory, session_key_for(event), action, argument
        )
    await send_parts(bot, event, [reply])


async def run_memory_action(
    runtime: Runtime, memory: MemoryService, scope: str, action: str, argument: str
) -> str:
    """One `~记忆` action on `scope`; a bad argument gets the usage line."""
    if action == "列表":
        page = _page_number(argument)
        if page is None:
            return texts.MEMORY_USAGE
        records = await memory.list(scope)
        return texts.memory_page(records, page, PAGE_SIZE) if records else texts.MEMORY_EMPTY
    if action == "搜索" and argument:
        hits = await memory.search(scope, argument, SEARCH_LIMIT)
        return texts.memory_search_result(argument, [h.memory for h in hits])
    if action == "删除" and _looks_like_id(argument):
        deleted = await memory.forget(scope, argument, by_person=True)
        return texts.memory_deleted(deleted) if deleted else texts.memory_not_found(argument)
    if action == "恢复" and _looks_like_id(argument):
        restored = await memory.restore(scope, argument)
        return (
            texts.memory_restored(restored)
            if restored
            else texts.memory_nothing_to_restore(argument)
        )
    if action == "清空" and argument == "":
        count = await memory.count(scope)
        return texts.memory_clear_confirm(count) if count else texts.MEMORY_EMPTY
    if action == "清空" and argument == "确认":
        return texts.memory_cleared(await memory.clear(scope))
    if action == "状态" and not argument:
        config = runtime.config
        return texts.memory_status(
            count=await memory.count(scope),
            max_entries=memory.max_entries,
            auto_inject=config.aimemory_memory_auto_inject,
            top_k=config.aimemory_memory_inject_topk,
        )
    return texts.MEMORY_USAGE


def _page_number(argument: str) -> int | None:
    if not argument:
        return 1
    return int(argument) if argument.isdigit() and int(argument) > 0 else None


def _looks_like_id(argument: str) -> bool:
    return bool(re.fullmatch(r"#?[0-9a-zA-Z]{2,12}", argument))
