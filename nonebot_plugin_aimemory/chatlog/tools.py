"""Chat-log tools for the model, bound to one session: they can only read that session."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..engine.tools import Tool, ToolError
from ..onebot.events import resolve_timezone
from .writer import format_rows

if TYPE_CHECKING:
    from ..runtime import Runtime

RECENT_DEFAULT = 20
LIMIT_MAX = 100

READ_RECENT_DESCRIPTION = (
    "读取当前会话最近的聊天记录（客观记录，包括已被压缩或清空的上下文）。"
    "每行带时间和发言人。只能读取当前这个群聊或私聊。"
)
SEARCH_DESCRIPTION = (
    "按关键词全文搜索当前会话的聊天记录，例如“上个月说的聚餐地点”。"
    "结果按相关度排序，每行带时间和发言人。只能搜索当前这个群聊或私聊。"
)


def chat_log_tools(runtime: Runtime, session_key: str) -> Iterable[Tool]:
    """The chat-log tools for one session; none when the chat log is disabled."""
    chat_log = runtime.chat_log
    if chat_log is None:
        return []
    zone = resolve_timezone(runtime.config.aimemory_timezone)

    async def read_recent_chat(arguments: dict[str, Any]) -> str:
        """The session's latest chat-log rows, flushed first so the newest are included."""
        await chat_log.flush()
        rows = await chat_log.store.recent(session_key, _limit(arguments.get("limit")))
        return format_rows(rows, zone) or "还没有聊天记录。"

    async def search_current_chat(arguments: dict[str, Any]) -> str:
        """Chat-log rows of this session that contain `keyword`."""
        keyword = str(arguments.get("keyword") or "").strip()
        if not keyword:
            raise ToolError("缺少参数 keyword")
        await chat_log.flush()
        rows = await chat_log.store.search(session_key, keyword, _limit(arguments.get("limit")))
        shown = keyword if len(keyword) <= 50 else keyword[:50] + "…"
        return format_rows(rows, zone, keep="first") or f"没有找到包含“{shown}”的聊天记录。"

    limit_schema = {
        "type": "integer",
        "minimum": 1,
        "maximum": LIMIT_MAX,
        "description": "条数，1~100，默认 20",
    }
    return [
        Tool(
            "read_recent_chat",
            READ_RECENT_DESCRIPTION,
            read_recent_chat,
            {"type": "object", "properties": {"limit": limit_schema}, "required": []},
        ),
        Tool(
            "search_current_chat",
            SEARCH_DESCRIPTION,
            search_current_chat,
            {
                "type": "object",
                "properties": {
                    "keyword": {"type": "string", "description": "关键词"},
                    "limit": limit_schema,
                },
                "required": ["keyword"],
            },
        ),
    ]


def _limit(value: Any) -> int:
    try:
        limit = int(value) if value is not None else RECENT_DEFAULT
    except (TypeError, ValueError):
        limit = RECENT_DEFAULT
    return max(1, min(limit, LIMIT_MAX))
