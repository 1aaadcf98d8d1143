"""Chat-log tools for the model, bound to one session: they can only read that session."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import tzinfo
from typing import Any

from .. import prompts
from ..engine.tools import Tool, ToolError
from .lines import format_rows
from .writer import ChatLog

RECENT_DEFAULT = 20
LIMIT_MAX = 100


def chat_log_tools(chat_log: ChatLog, zone: tzinfo, session_key: str) -> Iterable[Tool]:
    """The chat-log tools, bound to one session."""

    async def read_recent_chat(arguments: dict[str, Any]) -> str:
        """The session's latest chat-log rows, flushed first so the newest are included;
        refused rows are left out, or the model's next request would be refused again."""
        await chat_log.flush()
        limit = _limit(arguments.get("limit"))
        rows = await chat_log.store.recent(session_key, limit, with_refused=False)
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

    return [
        Tool(
            "read_recent_chat",
            prompts.READ_RECENT_CHAT_DESCRIPTION,
            read_recent_chat,
            prompts.read_recent_chat_parameters(default_limit=RECENT_DEFAULT, limit_max=LIMIT_MAX),
        ),
        Tool(
            "search_current_chat",
            prompts.SEARCH_CURRENT_CHAT_DESCRIPTION,
            search_current_chat,
            prompts.search_current_chat_parameters(
                default_limit=RECENT_DEFAULT, limit_max=LIMIT_MAX
            ),
        ),
    ]


def _limit(value: Any) -> int:
    try:
        limit = int(value) if value is not None else RECENT_DEFAULT
    except (TypeError, ValueError):
        limit = RECENT_DEFAULT
    return max(1, min(limit, LIMIT_MAX))
