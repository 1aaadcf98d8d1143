"""The web panel (panel/): what its JSON API says when it refuses something, and the lines
the server itself writes into pages. The pages' own labels are in panel/static/."""

from __future__ import annotations

PANEL_UNAUTHORIZED = "请先登录（在面板首页输入令牌）。"
PANEL_WRONG_TOKEN = "令牌不对。"
PANEL_TOO_MANY_ATTEMPTS = "尝试次数太多，请一分钟后再试。"
PANEL_CSRF_REJECTED = "请求缺少有效的 CSRF 令牌，请刷新页面后重试。"
PANEL_BAD_SCOPE = "会话无效：只接受 g:<群号>、f:<QQ号>、u:<QQ号>（可加 @账号、#人设）。"
PANEL_BAD_JSON = "请求内容不是有效的 JSON 对象。"
PANEL_BODY_TOO_LARGE = "请求内容太长，面板不接收。"
PANEL_BODY_INCOMPLETE = "请求内容没有传完整。"
PANEL_CONTENT_NEEDED = "请填写记忆内容。"
PANEL_TAGS_LIST = "标签应是列表或以逗号分隔的文字。"
PANEL_PRIVATE_ONLY = "只有个人记忆可以设为私密。"
PANEL_NOT_RUNNING = "机器人还没有启动好，请稍后再试。"
MEMORY_UNAVAILABLE_PANEL = "长期记忆不可用：数据库无法打开。"


def panel_not_found(what: str) -> str:
    """An id or a page the panel does not know (in this scope)."""
    return f"找不到 {what[:40]}。"


def panel_chat_not_found(key: str) -> str:
    """The page or API row of a chat the panel holds nothing of."""
    return (
        f"找不到会话 {key}：机器人还没有在这里说过话，也没有存下它的记忆、聊天记录或用量。"
        "请从总览里选择会话。"
    )


def panel_memory_full(max_entries: int) -> str:
    """A panel save or restore when the scope holds its cap."""
    return f"记忆已满（{max_entries} 条），请先删除一些。"


def panel_save_refused(outcome: object) -> str:
    """Why the panel's save did not store a memory (a SaveOutcome, by its status)."""
    status = str(getattr(outcome, "status", ""))
    reason = str(getattr(outcome, "reason", "") or "")
    memory = getattr(outcome, "memory", None)
    if status == "duplicate" and memory is not None:
        return f"已有相同的记忆 #{memory.id}。"
    if status == "tombstoned":
        return f"这条内容曾被删除（#{reason}），不再保存；可以先恢复它。"
    if status == "full":
        return "记忆已满，请先删除一些。"
    if status == "empty":
        return "内容为空。"
    return f"内容被拒绝：{reason}" if reason else "内容被拒绝。"


def panel_update_refused(status: str, reason: str) -> str:
    """Why the panel's edit was not applied (an UpdateOutcome's status and reason)."""
    if status == "duplicate":
        return "改成的内容与另一条记忆相同。"
    if status == "tombstoned":
        return "改成的内容曾被删除，不再保存。"
    if status == "empty":
        return "内容为空。"
    return f"内容被拒绝：{reason}" if reason else "内容被拒绝。"


TRY_NOT_A_TEST_CHAT = "试聊只能在测试会话里进行：测试群，或小明、小红、小刚的私聊。"
TRY_BAD_SPEAKER = "这个测试会话里没有这个说话人。"
TRY_BAD_MESSAGE = (
    "消息格式不对：需要说话人（speaker）和文字（text）；at 是列表，reply 要有 speaker 和 text。"
)
# What each LLMError kind means, for the try page's details of a failed answer.
_FAILURE_KINDS = {
    "timeout": "请求超时",
    "unreachable": "连不上模型服务",
    "garbage": "返回的内容无法解析",
    "empty": "返回了空回答",
    "http": "请求被拒绝或服务出错",
    "context_length": "超出模型的上下文长度",
    "refused": "内容被服务商拒绝",
    "account": "密钥、余额或额度有问题",
}


def try_failure(
    *, model: str, kind: str, status: int | None, code: str | None, message: str
) -> str:
    """What the provider said when the model gave no answer, on the try page."""
    where = "，".join(part for part in (f"HTTP {status}" if status else "", code or "") if part)
    said = f"：{message}" if message else ""
    return f"模型 {model} 没有给出回答，{_FAILURE_KINDS.get(kind, kind)}（{where or kind}）{said}"
