"""Everything a QQ user reads, in one place so it can be reviewed together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .store.memory_store import MemoryRecord

NOT_CONFIGURED = "AI 还没有配置好（缺少 API Key），请联系机器人管理员。"
LLM_UNAVAILABLE = "AI 暂时无法回答，请稍后再试。"
LLM_REFUSED = "这条消息被模型服务商的内容审核拦截了，换个说法试试。"
LLM_ACCOUNT_PROBLEM = "模型服务的密钥或余额有问题，请联系管理员。"
LLM_REQUEST_REJECTED = "模型服务拒绝了这条消息，没能回答。"
LLM_TIMEOUT = "AI 响应超时了，请稍后再试。"
TOO_LONG = "这条消息太长了，超出了模型能处理的长度，请缩短后再发。"
LLM_EMPTY = "AI 这次没有给出回答，换个说法再试试吧。"
TURN_FAILED = "出了点问题，这条消息没能回答，请稍后再试。"
COMMAND_FAILED = "命令执行失败了，请稍后再试。"
STOPPED = "已停止当前回答。"
NOTHING_TO_STOP = "当前没有正在进行的回答。"
# One notice per burst when one person sends more than one turn answers.
BURST_TOO_LONG = "消息太多啦，我先回答前面的。"
CLEARED = "已清空本会话的上下文。"
PERMISSION_DENIED = "只有群主、群管理员或机器人超级用户可以这样做。"
REPLY_TRUNCATED = "……（回复过长，已省略后续内容）"
EMPTY_MESSAGE = "你好像什么也没说～"

DIALOG_USAGE = "用法：~对话 状态 | ~对话 清空 | ~对话 停止"


def account_problem_for_superusers(
    *, model: str, status: int | None, code: str | None, message: str | None
) -> str:
    """The private message to SUPERUSERS when the model service rejects the key or the
    account (at most one an hour): what the service answered."""
    answer = "，".join(
        part
        for part in (
            f"HTTP {status}" if status is not None else None,
            f"代码 {code}" if code else None,
            message[:200] if message else None,
        )
        if part
    )
    return (
        f"[AI 记忆] 模型服务（{model}）拒绝了请求：{answer or '没有说明原因'}。"
        "请检查 API Key 和账户余额；修好之前机器人无法回答。"
    )


def dialog_status(
    *,
    context_tokens: int,
    budget_tokens: int,
    message_count: int,
    summary_tokens: int | None,
    compressions: int,
    last_compressed: str | None,
    persistent: bool,
    resident_sessions: int | None,
) -> str:
    """The `~对话 状态` report: context use, compressions and where history is kept."""
    percent = context_tokens / budget_tokens * 100 if budget_tokens else 0.0
    lines = [
        f"上下文：{context_tokens} / {budget_tokens} tokens（{percent:.1f}%）",
        f"消息数：{message_count}",
        f"摘要：约 {summary_tokens} tokens" if summary_tokens is not None else "摘要：无",
        f"压缩次数：{compressions}"
        + (f"（最近一次 {last_compressed}）" if last_compressed else ""),
    ]
    if not persistent:
        lines.append("存储：仅内存（数据库不可用，重启后会丢失）")
    if resident_sessions is not None:
        lines.append(f"常驻会话：{resident_sessions}")
    return "\n".join(lines)


# ---------------------------------------------------------------- long-term memory

MEMORY_USAGE = (
    "用法：~记忆 列表 [页码] | 搜索 <词> | 删除 <编号> | 清空 | 恢复 <编号> | 状态 | "
    "开启 | 关闭 | 间隔 <秒> | 立即生成"
)
MEMORY_UNAVAILABLE = "长期记忆不可用：数据库无法打开，请联系机器人管理员。"
MEMORY_EMPTY = "还没有任何记忆。"


def memory_line(record: MemoryRecord) -> str:
    """`#ab3d 内容 [标签：a、b] (关于 12345)` — one memory on one line."""
    line = f"#{record.id} {record.content}"
    if record.tags:
        line += f" [标签：{'、'.join(record.tags)}]"
    if record.user_id:
        line += f" (关于 {record.user_id})"
    return line


def memory_not_found(memory_id: str) -> str:
    """Reply when no memory has the given id."""
    return f"没有编号为 #{memory_id.strip().lstrip('#')} 的记忆。"


def memory_not_found_with_usage(memory_id: str) -> str:
    """`~记忆 删除` of an id this chat does not have: say so, and how the command goes."""
    return memory_not_found(memory_id) + MEMORY_USAGE


def memory_page_count(total: int, page_size: int) -> int:
    """How many pages `~记忆 列表` has for `total` memories (at least one)."""
    return max(1, -(-total // page_size))


def memory_page(records: Sequence[MemoryRecord], page: int, page_size: int) -> str:
    """One page of the `~记忆 列表` listing (`page` within 1…memory_page_count)."""
    total = len(records)
    pages = memory_page_count(total, page_size)
    shown = records[(page - 1) * page_size : page * page_size]
    header = f"记忆（第 {page}/{pages} 页，共 {total} 条）："
    return "\n".join([header, *(memory_line(r) for r in shown)])


def memory_no_such_page(page: int, pages: int, total: int) -> str:
    """`~记忆 列表 <页码>` past the last page."""
    return f"没有第 {page} 页：记忆共 {total} 条，{pages} 页。"


def memory_search_result(query: str, records: Sequence[MemoryRecord]) -> str:
    """The `~记忆 搜索` result, or a note that nothing matched."""
    if not records:
        return f"没有找到与“{query}”相关的记忆。"
    return "\n".join([f"与“{query}”相关的记忆：", *(memory_line(r) for r in records)])


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


def memory_status(*, count: int, max_entries: int, auto_inject: bool, top_k: int) -> str:
    """The memory part of `~记忆 状态`: count against the cap and auto-injection."""
    inject = f"开启（每次最多 {top_k} 条）" if auto_inject else "关闭"
    return f"记忆：{count} / {max_entries} 条\n自动注入：{inject}"


# ---------------------------------------------------------------- memory review

REVIEW_NO_EXTERNAL_CONTEXT = "自动整理记忆：未启用（配置不允许把聊天记录发给模型）"
REVIEW_INTERVAL_USAGE = "用法：~记忆 间隔 <秒>，范围 60～86400"
REVIEW_FAILED = "整理失败：AI 暂时无法回答，请稍后再试。"


def review_status(
    *, enabled: bool, interval_seconds: int, last_review: str | None, pending: bool, running: bool
) -> str:
    """The reviewer part of `~记忆 状态`: switch, interval, last run and pending work."""
    switch = (
        f"开启（每 {interval_seconds} 秒）" if enabled else f"关闭（间隔 {interval_seconds} 秒）"
    )
    state = "进行中" if running else ("有待整理的新聊天" if pending else "无")
    return "\n".join(
        [
            f"自动整理记忆：{switch}",
            f"上次整理：{last_review or '从未'}",
            f"待整理：{state}",
        ]
    )


def review_switched(enabled: bool) -> str:
    """Confirm that automatic review was switched on or off."""
    return "已开启本会话的自动整理记忆。" if enabled else "已关闭本会话的自动整理记忆。"


def review_interval_set(seconds: int) -> str:
    """Confirm the new review interval."""
    return f"本会话的自动整理间隔已设为 {seconds} 秒。"


def review_result(created: int, updated: int) -> str:
    """What a manual `~记忆 立即生成` review created and updated."""
    if not created and not updated:
        return "整理完成：没有需要记住的内容。"
    return f"整理完成：新增 {created} 条，更新 {updated} 条。"
