"""What a QQ user is told when a turn or a command cannot be answered, and the short
notices around a turn (stopped, cleared, truncated)."""

from __future__ import annotations

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
NOTHING_TO_STOP = "当前没有正在进行的回答。"
# One notice per burst when one person sends more than one turn answers.
BURST_TOO_LONG = "消息太多啦，我先回答前面的。"
CLEARED = "已清空本会话的上下文。"
PERMISSION_DENIED = "只有群主、群管理员或机器人超级用户可以这样做。"
REPLY_TRUNCATED = "……（回复过长，已省略后续内容）"
EMPTY_MESSAGE = "你好像什么也没说～"
# While the plugin waits for its PostgreSQL database (deferred_start.py).
DATABASE_NOT_READY = "机器人的记忆数据库还没连上，暂时不能回答，请稍后再试。"
# A private message whose sender id is no QQ number (0, negative): nothing is kept for it.
PRIVATE_SENDER_UNKNOWN = "认不出你的 QQ 号，私聊暂时没法回答，可以在群里找我聊～"
# In place of a quote said in another chat, or a quote of the bot that it cannot place.
QUOTE_HIDDEN = "[引用 无法显示]"


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
