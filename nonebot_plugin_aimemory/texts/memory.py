"""The `~记忆` command: chat memories and a person's own (`~记忆 我的`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING

from ..text import LINE_BREAK_MARK
from .panel import panel_save_refused
from .provenance import provenance_note

if TYPE_CHECKING:
    from ..store import MemoryRecord

MEMORY_USAGE = (
    "用法：~记忆 列表 [页码] | 搜索 <词> | 添加 <内容> | 删除 <编号> | 清空 | 恢复 <编号> | "
    "状态 | 开启 | 关闭 | 间隔 <秒> | 立即生成 | 我的 …（你的个人记忆）"
)
MEMORY_UNAVAILABLE = "长期记忆不可用：数据库无法打开，请联系机器人管理员。"
MEMORY_EMPTY = "还没有任何记忆。"
# Why a question is not kept (the model's tool result and a person's command alike).
QUESTION_NOT_SAVED = "这是一个提问，不是事实；要记的话把事实本身写成陈述句"
# How a person's memory is marked where chat memories are shown too (and in their listing).
PERSONAL_MARK = "个人"
PRIVATE_PERSONAL_MARK = "个人·私密"


def memory_line(record: MemoryRecord, *, personal: bool = False, quoted: bool = False) -> str:
    """`#ab3d 内容 [标签：a、b] (关于 12345)` — one memory on one line; a person's memory
    `#u3fa9 [个人] 内容 …` (`[个人·私密]` when private). `quoted` (what the model reads):
    the content in 「」, any 「」 of its own turned to 『』 so that it cannot end the quote."""
    line = f"#{record.id} "
    if personal:
        line += f"[{PRIVATE_PERSONAL_MARK if record.private else PERSONAL_MARK}] "
    line += quote(record.content) if quoted else record.content
    if record.tags:
        line += f" [标签：{'、'.join(record.tags)}]"
    if record.user_id:
        line += f" (关于 {record.user_id})"
    return line


def attributed_line(
    record: MemoryRecord, zone: tzinfo, *, personal: bool = False, quoted: bool = False
) -> str:
    """`memory_line`, then where the memory came from, its day in `zone`:
    `#ab3d 内容（小明(20001) 说，12-01）` (nothing more when that is unknown)."""
    said_on = _day(record.created_at, zone)
    line = memory_line(record, personal=personal, quoted=quoted)
    return line + provenance_note(record.provenance, said_on)


def quote(content: str) -> str:
    """`「content」` on one line: its own corner brackets turned to white ones and its line
    breaks to ⏎ (a row written into the database by hand may hold them), so that nothing
    in it can end the quote or the block."""
    one_line = LINE_BREAK_MARK.join(content.splitlines())
    return "「" + one_line.replace("「", "『").replace("」", "』") + "」"


def _day(stored: str, zone: tzinfo) -> date | None:
    """The day of a stored UTC time (`2026-12-01T08:00:00.000000Z`) in `zone`."""
    try:
        return datetime.fromisoformat(stored).astimezone(zone).date()
    except ValueError:
        return None


def memory_not_found(memory_id: str) -> str:
    """Reply when no memory has the given id."""
    return f"没有编号为 #{memory_id.strip().lstrip('#')} 的记忆。"


def memory_not_found_with_usage(memory_id: str) -> str:
    """`~记忆 删除` of an id this chat does not have: say so, and how the command goes."""
    return memory_not_found(memory_id) + MEMORY_USAGE


def memory_page_count(total: int, page_size: int) -> int:
    """How many pages `~记忆 列表` has for `total` memories (at least one)."""
    return max(1, -(-total // page_size))


def memory_page(records: Sequence[MemoryRecord], page: int, page_size: int, zone: tzinfo) -> str:
    """One page of the `~记忆 列表` listing (`page` within 1…memory_page_count)."""
    total = len(records)
    pages = memory_page_count(total, page_size)
    shown = records[(page - 1) * page_size : page * page_size]
    header = f"记忆（第 {page}/{pages} 页，共 {total} 条）："
    return "\n".join([header, *(attributed_line(r, zone) for r in shown)])


def memory_no_such_page(page: int, pages: int, total: int) -> str:
    """`~记忆 列表 <页码>` past the last page."""
    return f"没有第 {page} 页：记忆共 {total} 条，{pages} 页。"


def memory_search_result(query: str, records: Sequence[MemoryRecord], zone: tzinfo) -> str:
    """The `~记忆 搜索` result, or a note that nothing matched."""
    if not records:
        return f"没有找到与“{query}”相关的记忆。"
    lines = (attributed_line(r, zone) for r in records)
    return "\n".join([f"与“{query}”相关的记忆：", *lines])


def memory_added(record: MemoryRecord) -> str:
    """Confirm `~记忆 添加`."""
    return f"已记下记忆 #{record.id}：{record.content[:50]}"


def memory_not_added(outcome: object) -> str:
    """Why `~记忆 添加` stored nothing (a SaveOutcome), as the panel says it."""
    return f"没有记下：{panel_save_refused(outcome)}"


def memory_deleted(record: MemoryRecord) -> str:
    """Confirm a deletion and say how to undo it."""
    return (
        f"已删除记忆 #{record.id}：{record.content[:50]}"
        f"（之后不会再自动记住这条内容；撤销请发：~记忆 恢复 {record.id}）"
    )


def memory_restored(record: MemoryRecord) -> str:
    """Confirm a restore."""
    return f"已恢复记忆 #{record.id}：{record.content[:50]}"


def memory_nothing_to_restore(memory_id: str) -> str:
    """Reply when there is no deleted memory with that id to restore."""
    return f"没有可恢复的记忆 #{memory_id.strip().lstrip('#')}。"


def memory_nothing_to_restore_with_usage(memory_id: str) -> str:
    """`~记忆 恢复` of an id this chat has never had: say so, and how the command goes."""
    return memory_nothing_to_restore(memory_id) + MEMORY_USAGE


def memory_purged(memory_id: str, days: int) -> str:
    """`~记忆 恢复` of a memory deleted so long ago that it was purged (its tombstone stays)."""
    return f"记忆 #{memory_id.strip().lstrip('#')} 删除已超过 {days} 天，内容已彻底清除，无法恢复。"


def memory_full_for_restore(max_entries: int) -> str:
    """Reply when a restore would go over the memory cap."""
    return f"无法恢复：记忆已满（{max_entries} 条），请先删除一些。"


def memory_clear_confirm(count: int) -> str:
    """Ask for confirmation before `~记忆 清空` deletes everything."""
    return f"确定要清空本会话的全部 {count} 条记忆吗？确认请发送：~记忆 清空 确认"


def memory_cleared(count: int) -> str:
    """Confirm that the memories were cleared."""
    return f"已清空 {count} 条记忆。"


def memory_status(
    *,
    count: int,
    max_entries: int,
    auto_inject: bool,
    top_k: int,
    personal: tuple[int, int, bool] | None = None,
) -> str:
    """The memory part of `~记忆 状态`: count against the cap and auto-injection, then the
    caller's personal memories (count, cap, whether private ones were counted) if any."""
    inject = f"开启（每次最多 {top_k} 条）" if auto_inject else "关闭"
    lines = [f"记忆：{count} / {max_entries} 条", f"自动注入：{inject}"]
    if personal is not None:
        mine, cap, with_private = personal
        where = "" if with_private else "（不含私密的）"
        lines.append(f"你的个人记忆：{mine} / {cap} 条{where}")
    return "\n".join(lines)


PERSONAL_MEMORY_USAGE = (
    "用法：~记忆 我的 [页码] | 我的 删除 <编号> | 我的 恢复 <编号> | 我的 清空 | "
    "我的 公开 <编号> | 我的 私密 <编号>"
)
PERSONAL_MEMORY_OFF = "个人记忆功能没有开启。"
PERSONAL_MEMORY_NO_CALLER = "认不出是谁发的命令，无法查看个人记忆。"
PERSONAL_MEMORY_ANONYMOUS = "匿名消息没有个人记忆：认不出匿名的是谁。"
PERSONAL_MEMORY_EMPTY = "你还没有个人记忆。"
PERSONAL_MEMORY_EMPTY_HERE = "你在这里还没有可见的个人记忆（私密的只在私聊里显示）。"
PERSONAL_MEMORY_OTHERS_DENIED = "只有机器人超级用户可以删除别人的个人记忆。"


def personal_memory_page(
    records: Sequence[MemoryRecord],
    page: int,
    page_size: int,
    zone: tzinfo,
    *,
    with_private: bool,
) -> str:
    """One page of `~记忆 我的`, in the format of `~记忆 列表`; in a group, a note that
    private memories are not listed."""
    total = len(records)
    pages = memory_page_count(total, page_size)
    shown = records[(page - 1) * page_size : page * page_size]
    where = "" if with_private else "，私密的只在私聊里显示"
    header = f"你的个人记忆（第 {page}/{pages} 页，共 {total} 条{where}）："
    return "\n".join([header, *(attributed_line(r, zone, personal=True) for r in shown)])


def personal_memory_not_found(memory_id: str) -> str:
    """`~记忆 我的 …` with an id that is not among the caller's memories visible here (a
    nonexistent id and another person's get this same answer)."""
    return memory_not_found(memory_id) + PERSONAL_MEMORY_USAGE


def personal_memory_deleted(record: MemoryRecord) -> str:
    """Confirm that the caller deleted one of their personal memories."""
    return (
        f"已删除你的个人记忆 #{record.id}：{record.content[:50]}"
        f"（之后不会再记住这条内容；撤销请发：~记忆 我的 恢复 {record.id}）"
    )


def personal_memory_deleted_for(record: MemoryRecord, user_id: str) -> str:
    """Confirm that a SUPERUSER deleted someone's personal memory (its content is not
    repeated: it may be private)."""
    return f"已删除 {user_id} 的个人记忆 #{record.id}。"


def personal_memory_restored(record: MemoryRecord) -> str:
    """Confirm that the caller restored one of their personal memories."""
    return f"已恢复你的个人记忆 #{record.id}：{record.content[:50]}"


def personal_memory_nothing_to_restore(memory_id: str) -> str:
    """`~记忆 我的 恢复` of an id with no deleted memory of the caller's visible here."""
    return memory_nothing_to_restore(memory_id) + PERSONAL_MEMORY_USAGE


def personal_memory_clear_confirm(count: int, *, with_private: bool) -> str:
    """Ask before `~记忆 我的 清空` deletes the caller's personal memories."""
    which = "全部" if with_private else "公开的"
    return f"确定要清空你{which} {count} 条个人记忆吗？确认请发送：~记忆 我的 清空 确认"


def personal_memory_cleared(count: int) -> str:
    """Confirm that the caller's personal memories were cleared."""
    return f"已清空你的 {count} 条个人记忆。"


def personal_memory_made_public(record: MemoryRecord) -> str:
    """Confirm that a personal memory is public now."""
    shown = record.content[:50]
    return f"已公开个人记忆 #{record.id}：{shown}（之后你在任何群里说话时都可能用到它）"


def personal_memory_made_private(record: MemoryRecord) -> str:
    """Confirm that a personal memory is private now (its content is not repeated: the
    command may have been sent in a group)."""
    return f"已将个人记忆 #{record.id} 设为私密：之后只在你和我的私聊里使用。"
