"""`~记忆` commands: people see, search, delete and restore what the bot remembers."""

from __future__ import annotations

import logging
import re

from nonebot.adapters.onebot.v11 import Bot, MessageEvent

from .. import texts
from ..engine.llm import LLMError
from ..onebot.events import is_manager, resolve_timezone, send_parts, session_key_for
from ..runtime import Runtime
from ..store.database import parse_utc_text
from .service import MemoryFull, MemoryService

logger = logging.getLogger("nonebot_plugin_aimemory")

PAGE_SIZE = 10
SEARCH_LIMIT = 10
MANAGER_ACTIONS = frozenset({"删除", "清空", "恢复", "开启", "关闭", "间隔", "立即生成"})
MIN_INTERVAL_SECONDS = 60
MAX_INTERVAL_SECONDS = 86_400


async def run_memory_command(
    bot: Bot, event: MessageEvent, runtime: Runtime, action: str, argument: str
) -> None:
    """Answer `~记忆 <action> <argument>` for the event's scope."""
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
        if not records:
            return texts.MEMORY_EMPTY
        pages = texts.memory_page_count(len(records), PAGE_SIZE)
        if page > pages:
            return texts.memory_no_such_page(page, pages, len(records))
        return texts.memory_page(records, page, PAGE_SIZE)
    if action == "搜索" and argument:
        hits = await memory.search(scope, argument, SEARCH_LIMIT)
        return texts.memory_search_result(argument, [h.memory for h in hits])
    if action == "删除" and _looks_like_id(argument):
        deleted = await memory.forget(scope, argument, by_person=True)
        if deleted is None:
            return texts.memory_not_found_with_usage(argument)
        return texts.memory_deleted(deleted)
    if action == "恢复" and _looks_like_id(argument):
        try:
            restored = await memory.restore(scope, argument)
        except MemoryFull as full:
            return texts.memory_full_for_restore(full.args[0])
        if restored is not None:
            return texts.memory_restored(restored)
        if await memory.get(scope, argument) is not None:
            return texts.memory_nothing_to_restore(argument)  # a live memory: nothing to undo
        return texts.memory_nothing_to_restore_with_usage(argument)
    if action == "清空" and argument == "":
        count = await memory.count(scope)
        return texts.memory_clear_confirm(count) if count else texts.MEMORY_EMPTY
    if action == "清空" and argument == "确认":
        return texts.memory_cleared(await memory.clear(scope))
    if action == "状态" and not argument:
        config = runtime.config
        status = texts.memory_status(
            count=await memory.count(scope),
            max_entries=memory.max_entries,
            auto_inject=config.aimemory_memory_auto_inject,
            top_k=config.aimemory_memory_inject_topk,
        )
        return f"{status}\n{await review_status(runtime, scope)}"
    if action in ("开启", "关闭", "间隔", "立即生成"):
        return await run_review_action(runtime, scope, action, argument)
    return texts.MEMORY_USAGE


async def review_status(runtime: Runtime, scope: str) -> str:
    """The reviewer status of a scope for `~记忆 状态`."""
    reviews = runtime.reviews
    if reviews is None:
        return texts.REVIEW_NO_EXTERNAL_CONTEXT
    state = await reviews.store.get(scope)
    last = state.last_review_at
    zone = resolve_timezone(runtime.config.aimemory_timezone)
    return texts.review_status(
        enabled=reviews.enabled(state),
        interval_seconds=reviews.interval(state),
        last_review=parse_utc_text(last).astimezone(zone).strftime("%Y-%m-%d %H:%M")
        if last
        else None,
        pending=state.pending,
        running=scope in reviews.running,
    )


async def run_review_action(runtime: Runtime, scope: str, action: str, argument: str) -> str:
    """开启 / 关闭 / 间隔 <秒> / 立即生成 for the background reviewer of `scope`."""
    reviews = runtime.reviews
    if reviews is None:
        return texts.REVIEW_NO_EXTERNAL_CONTEXT
    if action in ("开启", "关闭") and not argument:
        await reviews.store.set_enabled(scope, action == "开启")
        return texts.review_switched(action == "开启")
    if action == "间隔":
        if (
            not argument.isdigit()
            or not MIN_INTERVAL_SECONDS <= int(argument) <= MAX_INTERVAL_SECONDS
        ):
            return texts.REVIEW_INTERVAL_USAGE
        await reviews.store.set_interval(scope, int(argument))
        return texts.review_interval_set(int(argument))
    if action == "立即生成" and not argument:
        if runtime.chat_log is not None:
            await runtime.chat_log.flush()
        try:
            outcome = await reviews.run_now(scope)
        except LLMError as exc:
            logger.warning("manual review of %s failed: %s", scope, exc)
            return texts.REVIEW_FAILED
        except Exception:
            logger.exception("manual review of %s failed", scope)
            return texts.REVIEW_FAILED
        return texts.review_result(
            outcome.created if outcome else 0, outcome.updated if outcome else 0
        )
    return texts.MEMORY_USAGE


def _page_number(argument: str) -> int | None:
    if not argument:
        return 1
    return int(argument) if argument.isdigit() and int(argument) > 0 else None


def _looks_like_id(argument: str) -> bool:
    return bool(re.fullmatch(r"#?[0-9a-zA-Z]{2,12}", argument))
