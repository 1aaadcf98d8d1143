"""The `~对话` command: its usage line and the `状态` report."""

from __future__ import annotations

DIALOG_USAGE = "用法：~对话 状态 | ~对话 清空 | ~对话 停止 | ~对话 用量"
# `~对话 停止` from a member with nothing of their own running or queued, while others have.
NOTHING_OF_YOURS_TO_STOP = "你没有正在回答或排队中的消息；别人的只有群主、管理员能停止。"


def stopped_messages(*, answering: int, queued: int, everyone: bool) -> str:
    """`~对话 停止`: how many messages were stopped (the one being answered, those waiting)
    and whose: the sender's own, or everyone's (a manager in a group)."""
    stopped = []
    if answering:
        stopped.append(f"正在回答的 {answering} 条")
    if queued:
        stopped.append(f"排队中的 {queued} 条")
    whose = "所有人" if everyone else "你"
    return f"已停止{whose}的消息：{'，'.join(stopped)}。"


def account_line(account: str) -> str:
    """Which bot account a `~对话 状态` or `~对话 用量` report is about."""
    return f"账号：{account}（每个账号的上下文和用量分开计算）"


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
