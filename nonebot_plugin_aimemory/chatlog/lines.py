"""Chat-log rows as the model reads them: one line per message, time and speaker first."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo

from ..engine import MAX_TOOL_RESULT_CHARS
from ..store import ChatRow, parse_utc_text
from ..text import LINE_BREAK_MARK, cut_first, fit_lines


def format_row(row: ChatRow, zone: tzinfo) -> str:
    """`[2026-11-30 14:05] 小明(12345)：text` on one line (line breaks inside a message become
    ⏎, so every line starts with its time and speaker); the bot's own lines say 机器人."""
    moment = parse_utc_text(row.created_at).astimezone(zone).strftime("%Y-%m-%d %H:%M")
    if row.role == "assistant":
        speaker = "机器人"
    else:
        speaker = f"{row.speaker_name or row.speaker_id}({row.speaker_id})"
    return LINE_BREAK_MARK.join(f"[{moment}] {speaker}：{row.text}".splitlines())


# Room left under the cap on tool results for the lines that frame the rows as quoted data.
ROWS_MAX_CHARS = MAX_TOOL_RESULT_CHARS - 100


def format_rows(rows: Sequence[ChatRow], zone: tzinfo, *, keep: str = "newest") -> str:
    """Lines within the tool-result cap, keeping the newest (or the first, best-ranked); one
    line longer than the cap shows its start, not "nothing found"."""
    lines = [format_row(row, zone) for row in rows]
    return fit_lines(lines, ROWS_MAX_CHARS, newest=keep == "newest", shorten=cut_first).text
