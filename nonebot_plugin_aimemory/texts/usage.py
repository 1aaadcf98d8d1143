"""Token usage: the daily quota notice and the `~对话 用量` reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..scopes import Scope

if TYPE_CHECKING:
    from ..engine import TokenCounts

DAILY_QUOTA_USED_UP = "今天的额度用完了，明天再聊吧。"
USAGE_ROLE_NAMES = {
    "main": "对话",
    "compressor": "压缩",
    "reviewer": "整理记忆",
    "extractor": "提取记忆",
    "guard": "检查记忆",
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
        lines += [f"- {_chat(chat)}：{counts.total_tokens} tokens" for chat, counts in top_chats]
    return "\n".join(lines)


def _chat(chat: str) -> str:
    """A chat's key, the try page's test chats marked as such."""
    scope = Scope.parse_or_none(chat)
    return f"{chat}（试聊测试）" if scope is not None and scope.is_test else chat
