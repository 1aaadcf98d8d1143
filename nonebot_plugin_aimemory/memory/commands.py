"""`~记忆` commands: people see, search, delete and restore what the bot remembers. The
review actions (开启 / 关闭 / 间隔 / 立即生成) go to the chat log's reviewer. `~记忆 我的 …`
acts on the sender's own personal memories (personal.py), in any chat, for anyone but an
anonymous sender (who has none); the other actions on the chat's memories only. Anyone may
add one (`添加`): it is theirs to answer for, and goes through the rules the model's saves
go through."""

from __future__ import annotations

import re
from typing import Protocol

from .. import texts
from ..engine import TurnSpeaker
from ..store import Provenance
from .attribution import spoken_by
from .personal import MemoryView, is_anonymous, personal_view, someones_memories
from .rules import clean_user_id
from .service import PURGE_DELETED_AFTER_DAYS, MemoryFull, MemoryService

PAGE_SIZE = 10
SEARCH_LIMIT = 10
REVIEW_ACTIONS = frozenset({"开启", "关闭", "间隔", "立即生成"})
MANAGER_ACTIONS = frozenset({"删除", "清空", "恢复"}) | REVIEW_ACTIONS
PERSONAL_ACTION = "我的"


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
        personal: bool = True,
    ) -> None:
        self.memory = memory
        self.reviews = reviews
        self.auto_inject = auto_inject
        self.inject_top_k = inject_top_k
        self.personal = personal

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
        """Answer one `~记忆` command sent in `scope` by `caller`."""
        if action == PERSONAL_ACTION:
            return await self._personal(scope, argument, caller, is_superuser=is_superuser)
        if action in MANAGER_ACTIONS and not is_manager:
            return texts.PERMISSION_DENIED
        if action in REVIEW_ACTIONS:
            return await self.reviews.run(scope, action, argument)
        return await self._memory_action(scope, action, argument, caller)

    async def _memory_action(
        self, scope: str, action: str, argument: str, caller: TurnSpeaker | None
    ) -> str:
        memory = self.memory
        if action == "列表":
            return await self._page(scope, argument)
        if action == "搜索" and argument:
            hits = await memory.search(scope, argument, SEARCH_LIMIT)
            return texts.memory_search_result(argument, [h.memory for h in hits], memory.zone)
        if action == "添加" and argument:
            return await self._add(scope, argument, caller)
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
                personal=await self._personal_count(scope, caller),
            )
            return f"{status}\n{await self.reviews.status(scope)}"
        return texts.MEMORY_USAGE

    async def _add(self, scope: str, content: str, caller: TurnSpeaker | None) -> str:
        """`~记忆 添加 <内容>`: the caller's words, saved through every rule."""
        typed = spoken_by(caller, "command") if caller is not None else Provenance("command")
        outcome = await self.memory.save(scope, content, source="command", provenance=typed)
        if outcome.status == "saved" and outcome.memory is not None:
            return texts.memory_added(outcome.memory)
        return texts.memory_not_added(outcome)

    async def _personal_count(
        self, scope: str, caller: TurnSpeaker | None
    ) -> tuple[int, int, bool] | None:
        """The caller's personal memories visible here: count, cap, private ones counted."""
        view = personal_view(scope, caller) if self.personal else None
        if view is None:
            return None
        count = await self.memory.count(view.scope, include_private=view.include_private)
        return count, self.memory.personal_max_entries, view.include_private

    async def _personal(
        self, scope: str, argument: str, caller: TurnSpeaker | None, *, is_superuser: bool
    ) -> str:
        """`~记忆 我的 …`: the caller's personal memories of this persona, as this chat may
        see them (in a group the public ones only); a SUPERUSER may delete anyone's."""
        if not self.personal:
            return texts.PERSONAL_MEMORY_OFF
        if is_anonymous(caller):
            return texts.PERSONAL_MEMORY_ANONYMOUS
        view = personal_view(scope, caller)
        if caller is None or view is None:
            return texts.PERSONAL_MEMORY_NO_CALLER
        words = argument.split()
        sub, rest = (words[0], words[1:]) if words else ("", [])
        if not rest and (not sub or sub.isdigit()):
            return await self._personal_page(view, sub)
        if sub == "删除" and len(rest) == 2 and _looks_like_id(rest[0]):
            return await self._delete_someones(scope, rest[0], rest[1], caller, is_superuser)
        if sub == "清空" and not rest:
            count = await self.memory.count(view.scope, include_private=view.include_private)
            if not count:
                return self._personal_empty(view)
            return texts.personal_memory_clear_confirm(count, with_private=view.include_private)
        if sub == "清空" and rest == ["确认"]:
            cleared = await self.memory.clear(view.scope, include_private=view.include_private)
            return texts.personal_memory_cleared(cleared)
        if len(rest) == 1 and _looks_like_id(rest[0]):
            return await self._personal_by_id(view, sub, rest[0])
        return texts.PERSONAL_MEMORY_USAGE

    async def _personal_page(self, view: MemoryView, argument: str) -> str:
        page = _page_number(argument)
        if page is None:
            return texts.PERSONAL_MEMORY_USAGE
        records = await self.memory.list(view.scope, include_private=view.include_private)
        if not records:
            return self._personal_empty(view)
        pages = texts.memory_page_count(len(records), PAGE_SIZE)
        if page > pages:
            return texts.memory_no_such_page(page, pages, len(records))
        return texts.personal_memory_page(
            records, page, PAGE_SIZE, self.memory.zone, with_private=view.include_private
        )

    @staticmethod
    def _personal_empty(view: MemoryView) -> str:
        return (
            texts.PERSONAL_MEMORY_EMPTY
            if view.include_private
            else texts.PERSONAL_MEMORY_EMPTY_HERE
        )

    async def _personal_by_id(self, view: MemoryView, sub: str, memory_id: str) -> str:
        """删除 / 恢复 / 公开 / 私密 of one of the caller's personal memories."""
        memory = self.memory
        if sub == "删除":
            deleted = await memory.forget(
                view.scope, memory_id, by_person=True, include_private=view.include_private
            )
            if deleted is None:
                return texts.personal_memory_not_found(memory_id)
            return texts.personal_memory_deleted(deleted)
        if sub == "恢复":
            return await self._restore(view, memory_id)
        if sub in ("公开", "私密"):
            # The owner's own choice, wherever they make it: a private memory may be made
            # public from a group (the confirmation of 私密 repeats no content).
            changed = await memory.set_private(view.scope, memory_id, sub == "私密")
            if changed is None:
                return texts.personal_memory_not_found(memory_id)
            if changed.private:
                return texts.personal_memory_made_private(changed)
            return texts.personal_memory_made_public(changed)
        return texts.PERSONAL_MEMORY_USAGE

    async def _delete_someones(
        self,
        scope: str,
        memory_id: str,
        typed_user_id: str,
        caller: TurnSpeaker,
        is_superuser: bool,
    ) -> str:
        """`~记忆 我的 删除 <编号> <QQ号>`: a SUPERUSER deletes someone's personal memory
        (private ones too; the reply repeats no content)."""
        user_id = clean_user_id(typed_user_id)
        if user_id is None:
            return texts.PERSONAL_MEMORY_USAGE
        if user_id == caller.user_id:
            own = personal_view(scope, caller)
            if own is not None:
                return await self._personal_by_id(own, "删除", memory_id)
        if not is_superuser:
            return texts.PERSONAL_MEMORY_OTHERS_DENIED
        target = someones_memories(scope, user_id)
        deleted = await self.memory.forget(target.scope, memory_id, by_person=True)
        if deleted is None:
            return texts.personal_memory_not_found(memory_id)
        return texts.personal_memory_deleted_for(deleted, user_id)

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
        return texts.memory_page(records, page, PAGE_SIZE, self.memory.zone)

    async def _restore(self, where: str | MemoryView, memory_id: str) -> str:
        """Undo a deletion in the chat's memories (`where` a scope) or the caller's own."""
        view = where if isinstance(where, MemoryView) else MemoryView(where)
        scope, visible = view.scope, view.include_private
        try:
            restored = await self.memory.restore(scope, memory_id, include_private=visible)
        except MemoryFull as full:
            return texts.memory_full_for_restore(full.args[0])
        if restored is not None:
            if view.personal:
                return texts.personal_memory_restored(restored)
            return texts.memory_restored(restored)
        if await self.memory.get(scope, memory_id, include_private=visible) is not None:
            return texts.memory_nothing_to_restore(memory_id)  # a live memory: nothing to undo
        if await self.memory.was_purged(scope, memory_id):
            return texts.memory_purged(memory_id, PURGE_DELETED_AFTER_DAYS)
        if view.personal:
            return texts.personal_memory_nothing_to_restore(memory_id)
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
