"""`~记忆` commands: people see, search, delete and restore what the bot remembers. The
review actions (开启 / 关闭 / 间隔 / 立即生成) go to the chat log's reviewer."""

from __future__ import annotations

import re
from typing import Protocol

from .. import texts
from ..engine.turn_context import TurnSpeaker
from .service import PURGE_DELETED_AFTER_DAYS, MemoryFull, MemoryService

PAGE_SIZE = 10
SEARCH_LIMIT = 10
REVIEW_ACTIONS = frozenset({"开启", "关闭", "间隔", "立即生成"})
MANAGER_ACTIONS = frozenset({"删除", "清空", "恢复"}) | REVIEW_ACTIONS


class ReviewCommandHandler(Protocol):
    """The reviewer's part of `~记忆`."""

    async def run(self, scope: str, action: str, argument: str) -> str:
        """Answer 开启 / 关闭 / 间隔 <秒> / 立即生成."""
        ...

    async def status(self, scope: str) -> str:
        """The reviewer's lines of `~记忆 状态`."""
        ...


class MemoryCommands:
    """`~记忆 <action> <argument>` on one scope; a bad argument gets the usage line."""

    def __init__(
        self,
        memory: MemoryService,
        reviews: ReviewCommandHandler,
        *,
        auto_inject: bool,
        inject_top_k: int,
    ) -> None:
        self.memory = memory
        self.reviews = reviews
        self.auto_inject = auto_inject
        self.inject_top_k = inject_top_k

    async def run(
        self,
        scope: str,
        action: str,
        argument: str,
        *,
        is_manager: bool,
        caller: TurnSpeaker | None = None,
        is_superuser: bool = False,
    ) -> str:
        """Answer one `~记忆` command sent in `scope`."""
        if action in MANAGER_ACTIONS and not is_manager:
            return texts.PERMISSION_DENIED
        if action in REVIEW_ACTIONS:
            return await self.reviews.run(scope, action, argument)
        return await self._memory_action(scope, action, argument)

    async def _memory_action(self, scope: str, action: str, argument: str) -> str:
        memory = self.memory
        if action == "列表":
            return await self._page(scope, argument)
        if action == "搜索" and argument:
            hits = await memory.search(scope, argument, SEARCH_LIMIT)
            return texts.memory_search_result(argument, [h.memory for h in hits])
        if action == "删除" and _looks_like_id(argument):
            deleted = await memory.forget(scope, argument, by_person=True)
            if deleted is None:
                return texts.memory_not_found_with_usage(argument)
            return texts.memory_deleted(deleted)
        if action == "恢复" and _looks_like_id(argument):
            return await self._restore(scope, argument)
        if action == "清空" and argument == "":
            count = await memory.count(scope)
            return texts.memory_clear_confirm(count) if count else texts.MEMORY_EMPTY
        if action == "清空" and argument == "确认":
            return texts.memory_cleared(await memory.clear(scope))
        if action == "状态" and not argument:
            status = texts.memory_status(
                count=await memory.count(scope),
                max_entries=memory.max_entries,
                auto_inject=self.auto_inject,
                top_k=self.inject_top_k,
            )
            return f"{status}\n{await self.reviews.status(scope)}"
        return texts.MEMORY_USAGE

    async def _page(self, scope: str, argument: str) -> str:
        page = _page_number(argument)
        if page is None:
            return texts.MEMORY_USAGE
        records = await self.memory.list(scope)
        if not records:
            return texts.MEMORY_EMPTY
        pages = texts.memory_page_count(len(records), PAGE_SIZE)
        if page > pages:
            return texts.memory_no_such_page(page, pages, len(records))
        return texts.memory_page(records, page, PAGE_SIZE)

    async def _restore(self, scope: str, memory_id: str) -> str:
        try:
            restored = await self.memory.restore(scope, memory_id)
        except MemoryFull as full:
            return texts.memory_full_for_restore(full.args[0])
        if restored is not None:
            return texts.memory_restored(restored)
        if await self.memory.get(scope, memory_id) is not None:
            return texts.memory_nothing_to_restore(memory_id)  # a live memory: nothing to undo
        if await self.memory.was_purged(scope, memory_id):
            return texts.memory_purged(memory_id, PURGE_DELETED_AFTER_DAYS)
        return texts.memory_nothing_to_restore_with_usage(memory_id)


class MemoryUnavailable:
    """`~记忆` when long-term memory is off (no database): every action says so."""

    async def run(
        self,
        scope: str,
        action: str,
        argument: str,
        *,
        is_manager: bool,
        caller: TurnSpeaker | None = None,
        is_superuser: bool = False,
    ) -> str:
        """The same short notice for every action."""
        return texts.MEMORY_UNAVAILABLE


def _page_number(argument: str) -> int | None:
    if not argument:
        return 1
    return int(argument) if argument.isdigit() and int(argument) > 0 else None


def _looks_like_id(argument: str) -> bool:
    return bool(re.fullmatch(r"#?[0-9a-zA-Z]{2,12}", argument))
