"""Everything a QQ user reads, in one place so it can be reviewed together."""

from __future__ import annotations

NOT_CONFIGURED = "AI 还没有配置好（缺少 API Key），请联系机器人管理员。"
LLM_UNAVAILABLE = "AI 暂时无法回答，请稍后再试。"
LLM_TIMEOUT = "AI 响应超时了，请稍后再试。"
TOO_LONG = "这条消息太长了，超出了模型能处理的长度，请缩短后再发。"
LLM_EMPTY = "AI 这次没有给出回答，换个说法再试试吧。"
TURN_FAILED = "出了点问题，这条消息没能回答，请稍后再试。"
STOPPED = "已停止当前回答。"
NOTHING_TO_STOP = "当前没有正在进行的回答。"
CLEARED = "已清空本会话的上下文。"
PERMISSION_DENIED = "只有群主、群管理员或机器人超级用户可以这样做。"
REPLY_TRUNCATED = "……（回复过长，已省略后续内容）"
EMPTY_MESSAGE = "你好像什么也没说～"

DIALOG_USAGE = "用法：~对话 状态 | ~对话 清空 | ~对话 停止"


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
