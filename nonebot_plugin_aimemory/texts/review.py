"""The memory reviewer's part of `~记忆`: its status, switch, interval and results."""

from __future__ import annotations

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
