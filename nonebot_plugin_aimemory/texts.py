"""Everything a QQ user reads, in one place so it can be reviewed together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine.usage import TokenCounts
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

DIALOG_USAGE = "用法：~对话 状态 | ~对话 清空 | ~对话 停止 | ~对话 用量"


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
    "开启 | 关闭 | 间隔 <秒> | 立即生成 | 我的 …（你的个人记忆）"
)
MEMORY_UNAVAILABLE = "长期记忆不可用：数据库无法打开，请联系机器人管理员。"
MEMORY_EMPTY = "还没有任何记忆。"
# How a person's memory is marked where chat memories are shown too (and in their listing).
PERSONAL_MARK = "个人"
PRIVATE_PERSONAL_MARK = "个人·私密"


def memory_line(record: MemoryRecord, *, personal: bool = False) -> str:
    """`#ab3d 内容 [标签：a、b] (关于 12345)` — one memory on one line; a person's memory
    `#u3fa9 [个人] 内容 …` (`[个人·私密]` when private)."""
    line = f"#{record.id} "
    if personal:
        line += f"[{PRIVATE_PERSONAL_MARK if record.private else PERSONAL_MARK}] "
    line += record.content
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


# ---------------------------------------------------------------- personal memory

PERSONAL_MEMORY_USAGE = (
    "用法：~记忆 我的 [页码] | 我的 删除 <编号> | 我的 恢复 <编号> | 我的 清空 | "
    "我的 公开 <编号> | 我的 私密 <编号>"
)
PERSONAL_MEMORY_OFF = "个人记忆功能没有开启。"
PERSONAL_MEMORY_NO_CALLER = "认不出是谁发的命令，无法查看个人记忆。"
PERSONAL_MEMORY_EMPTY = "你还没有个人记忆。"
PERSONAL_MEMORY_EMPTY_HERE = "你在这里还没有可见的个人记忆（私密的只在私聊里显示）。"
PERSONAL_MEMORY_OTHERS_DENIED = "只有机器人超级用户可以删除别人的个人记忆。"


def personal_memory_page(
    records: Sequence[MemoryRecord], page: int, page_size: int, *, with_private: bool
) -> str:
    """One page of `~记忆 我的`, in the format of `~记忆 列表`; in a group, a note that
    private memories are not listed."""
    total = len(records)
    pages = memory_page_count(total, page_size)
    shown = records[(page - 1) * page_size : page * page_size]
    where = "" if with_private else "，私密的只在私聊里显示"
    header = f"你的个人记忆（第 {page}/{pages} 页，共 {total} 条{where}）："
    return "\n".join([header, *(memory_line(r, personal=True) for r in shown)])


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


PERSONA_USAGE = "用法：~人设 列表 | ~人设 当前 | ~人设 切换 <名字>"
# A persona name is shown at most this long (a 200-character "name" is not echoed whole).
PERSONA_NAME_SHOWN_CHARS = 20


def _shown_persona(name: str) -> str:
    if len(name) <= PERSONA_NAME_SHOWN_CHARS:
        return name
    return name[:PERSONA_NAME_SHOWN_CHARS] + "…"


def persona_list(names: Sequence[str], current: str) -> str:
    """`~人设 列表`: every persona, one a line, the current one marked."""
    lines = [f"・{name}（当前）" if name == current else f"・{name}" for name in names]
    hint = "（切换：~人设 切换 <名字>）" if len(names) > 1 else "（还没有自定义人设）"
    return "可用人设：\n" + "\n".join(lines) + "\n" + hint


def persona_current(name: str) -> str:
    """`~人设 当前`."""
    return f"当前人设：{name}"


def persona_switched(name: str) -> str:
    """After a switch: each persona keeps its own context and memories."""
    return f"已切换到人设「{name}」。之前人设的上下文和记忆都保留着，切回去就能接着聊。"


def persona_unchanged(name: str) -> str:
    """Switching to the persona already played."""
    return f"现在就是人设「{name}」。"


def persona_missing(name: str, current: str) -> str:
    """Switching to a persona that does not exist (or no longer does)."""
    return (
        f"没有名为「{_shown_persona(name)}」的人设，仍然是「{current}」。"
        "发送 ~人设 列表 查看可用的人设。"
    )


# ---------------------------------------------------------------- token usage

DAILY_QUOTA_USED_UP = "今天的额度用完了，明天再聊吧。"
USAGE_ROLE_NAMES = {
    "main": "对话",
    "compressor": "压缩",
    "reviewer": "整理记忆",
    "extractor": "提取记忆",
    "vision": "识图",
    "embeddings": "向量",
}


def usage_line(role: str, counts: TokenCounts) -> str:
    """One role's line: prompt tokens (cache hits among them), completion tokens, calls."""
    name = USAGE_ROLE_NAMES.get(role, role)
    if role == "embeddings":
        return f"- {name}：{counts.prompt_tokens} tokens，{counts.calls} 次"
    cached = f"（缓存命中 {counts.cached_tokens}）" if counts.cached_tokens else ""
    return (
        f"- {name}：输入 {counts.prompt_tokens}{cached} / 输出 {counts.completion_tokens}，"
        f"{counts.calls} 次"
    )


def usage_period(title: str, total: TokenCounts, by_role: Sequence[tuple[str, TokenCounts]]) -> str:
    """A period's total and its roles' lines."""
    if not total.calls:
        return f"{title}：还没有用量"
    return "\n".join(
        [f"{title}：{total.total_tokens} tokens", *(usage_line(r, c) for r, c in by_role)]
    )


def usage_report(
    *,
    today: str,
    week: str,
    today_used_tokens: int,
    quota_tokens: int,
) -> str:
    """`~对话 用量` in a chat: today's and the last 7 days' periods (see usage_period), and
    the daily quota when one is set."""
    lines = [today, week]
    if quota_tokens:
        lines.append(f"每日额度：已用 {today_used_tokens} / {quota_tokens} tokens")
    return "\n".join(lines)


def usage_report_all_chats(
    *, today: str, week: str, top_chats: Sequence[tuple[str, TokenCounts]]
) -> str:
    """`~对话 用量` of a SUPERUSER in private chat: every chat's usage added up, and the
    chats that used the most over the last 7 days."""
    lines = ["所有会话合计", today, week]
    if top_chats:
        lines.append("近 7 天用得最多的会话：")
        lines += [f"- {chat}：{counts.total_tokens} tokens" for chat, counts in top_chats]
    return "\n".join(lines)


# The web panel (panel/): what its JSON API says when it refuses something, and the lines
# the server itself writes into pages. The pages' own labels are in panel/static/.
PANEL_UNAUTHORIZED = "请先登录（在面板首页输入令牌）。"
PANEL_WRONG_TOKEN = "令牌不对。"
PANEL_TOO_MANY_ATTEMPTS = "尝试次数太多，请一分钟后再试。"
PANEL_CSRF_REJECTED = "请求缺少有效的 CSRF 令牌，请刷新页面后重试。"
PANEL_BAD_SCOPE = "会话无效：只接受 g:<群号>、f:<QQ号>、u:<QQ号>（可加 #人设）。"
PANEL_BAD_JSON = "请求内容不是有效的 JSON 对象。"
PANEL_CONTENT_NEEDED = "请填写记忆内容。"
PANEL_TAGS_LIST = "标签应是列表或以逗号分隔的文字。"
PANEL_PRIVATE_ONLY = "只有个人记忆可以设为私密。"
PANEL_NOT_RUNNING = "机器人还没有启动好，请稍后再试。"
MEMORY_UNAVAILABLE_PANEL = "长期记忆不可用：数据库无法打开。"


def panel_not_found(what: str) -> str:
    """An id or a page the panel does not know (in this scope)."""
    return f"找不到 {what[:40]}。"


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
