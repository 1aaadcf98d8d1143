"""Chat-log tools for the model, bound to one session: they can only read that session."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timezone, tzinfo
from typing import Any

from .. import prompts
from ..engine import Tool, ToolError, current_speaker, current_voices
from ..store import ChatLogStore, ChatRow, utc_text
from ..text import query
from .lines import format_rows
from .search import search_rows
from .writer import ChatLog

RECENT_DEFAULT = 20
LIMIT_MAX = 100
# How far back a date without its year is looked for: chat logs are kept for days or months
# (aimemory_chat_log_keep_days), so ten years is plenty; each year is one index seek.
YEARLESS_LOOKBACK_YEARS = 10


def chat_log_tools(
    chat_log: ChatLog,
    zone: tzinfo,
    session_key: str,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> Iterable[Tool]:
    """The chat-log tools, bound to one session; `now` dates a query's "昨天" or "last week"
    (in `zone`)."""

    async def read_recent_chat(arguments: dict[str, Any]) -> str:
        """The session's latest chat-log rows, flushed first so the newest are included;
        refused rows are left out, or the model's next request would be refused again."""
        await chat_log.flush()
        limit = _limit(arguments.get("limit"))
        rows = await chat_log.store.recent(session_key, limit, with_refused=False)
        return quoted_rows(format_rows(rows, zone)) or "还没有聊天记录。"

    async def search_current_chat(arguments: dict[str, Any]) -> str:
        """Chat-log rows of this session that best match `keyword` (words or a question;
        by meaning too when rows have vectors); rows from the days it names come first."""
        keyword = str(arguments.get("keyword") or "").strip()
        if not keyword:
            raise ToolError("缺少参数 keyword")
        await chat_log.flush()
        periods = await named_periods(chat_log.store, session_key, keyword, zone, now())
        rows = await search_rows(
            chat_log.store,
            chat_log.vectors,
            session_key,
            keyword,
            _limit(arguments.get("limit")),
            periods,
        )
        rows = [row for row in rows if not being_answered(row)]
        shown = keyword if len(keyword) <= 50 else keyword[:50] + "…"
        found = quoted_rows(format_rows(rows, zone, keep="first"))
        return found or f"没有找到包含“{shown}”的聊天记录。"

    return [
        Tool(
            "read_recent_chat",
            prompts.READ_RECENT_CHAT_DESCRIPTION,
            read_recent_chat,
            prompts.read_recent_chat_parameters(default_limit=RECENT_DEFAULT, limit_max=LIMIT_MAX),
        ),
        Tool(
            "search_current_chat",
            prompts.SEARCH_CURRENT_CHAT_DESCRIPTION
            + (prompts.SEARCH_CURRENT_CHAT_BY_MEANING if chat_log.vectors.enabled else ""),
            search_current_chat,
            prompts.search_current_chat_parameters(
                default_limit=RECENT_DEFAULT, limit_max=LIMIT_MAX
            ),
        ),
    ]


def being_answered(row: ChatRow) -> bool:
    """Whether `row` is the message the turn answers, which the model reads already: a
    search for its own words finds it first, tells nothing, and a small model took it for
    the answer ("好的，你已经回复了最新一条消息", issue #36)."""
    speaker = current_speaker()
    if speaker is None or row.role == "assistant" or row.speaker_id != speaker.user_id:
        return False
    line = row.text.strip()
    return bool(line) and any(v.how == "said" and line in v.text for v in current_voices())


def quoted_rows(lines: str) -> str:
    """Chat-log lines as the model reads them: quoted data in one block ('' for none)."""
    return (
        prompts.framed(prompts.CHAT_LOG_OPENING, lines, prompts.CHAT_LOG_CLOSING) if lines else ""
    )


async def named_periods(
    store: ChatLogStore, session_key: str, text: str, zone: tzinfo, now: datetime
) -> list[tuple[str, str]]:
    """The days `text` names ("昨天", "上周", "last month", "5月2日"), as UTC [start, end)
    texts of the chat log, counted in `zone` from `now`. A date without its year is the
    latest such day the session has rows of: "5月2日" asked today means the last 2 May
    anyone here spoke, not this year's if the chat was silent then."""
    today = now.astimezone(zone).date()
    found = []
    for period in query.analyse(text, today).periods:
        if period.yearless:
            period = await _latest_with_rows(store, session_key, period, zone)
        if period is not None:
            found.append(_utc_texts(period, zone))
    return found


async def _latest_with_rows(
    store: ChatLogStore, session_key: str, period: query.Period, zone: tzinfo
) -> query.Period | None:
    earlier = (period.years_back(years) for years in range(YEARLESS_LOOKBACK_YEARS))
    candidates = [candidate for candidate in earlier if candidate is not None]
    found = await store.first_with_rows(
        session_key, [_utc_texts(candidate, zone) for candidate in candidates]
    )
    return candidates[found] if found is not None else None


def _utc_texts(period: query.Period, zone: tzinfo) -> tuple[str, str]:
    start, end = period.utc_bounds(zone)
    return utc_text(start), utc_text(end)


def _limit(value: Any) -> int:
    try:
        limit = int(value) if value is not None else RECENT_DEFAULT
    except (TypeError, ValueError):
        limit = RECENT_DEFAULT
    return max(1, min(limit, LIMIT_MAX))
