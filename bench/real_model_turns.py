"""What one addressed turn did, as the real-model bench sees it: the message, what the bot
sent, the model exchanges made meanwhile; and the checks on them (tool rounds, invented
tools, repeated calls, tool calls written as text, replies that are JSON, memory lines or
failure notices, stock replies), and the transcript lines written for each turn."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.real_model_proxy import Exchange, Usage

# A tool call written into the text instead of the API's tool_calls field.
TEXT_TOOL_CALL = re.compile(r'"name"\s*:.*"arguments"\s*:|<tool_call>|<tool_response>', re.DOTALL)
# A line as the memory tools and the injected block show memories (`#ab3d 内容`).
MEMORY_ID_LINE = re.compile(r"^\s*#[0-9a-z]{2,12}\s", re.MULTILINE)
MEMORY_FORMAT_STARTS = ("记忆更新", "【可能相关的长期记忆】")
# What a QQ user is told when a turn fails (nonebot_plugin_aimemory/texts/notices.py).
FAILURE_NOTICE_NAMES = (
    *("NOT_CONFIGURED", "LLM_UNAVAILABLE", "LLM_REFUSED", "LLM_ACCOUNT_PROBLEM"),
    *("LLM_REQUEST_REJECTED", "LLM_TIMEOUT", "TOO_LONG", "LLM_EMPTY", "TURN_FAILED"),
    *("BURST_TOO_LONG", "DATABASE_NOT_READY", "DAILY_QUOTA_USED_UP"),
)


@dataclass
class TurnRecord:
    """One message of the bench's chat and everything that followed it."""

    index: int
    scenario: str
    run: str
    phase: str
    kind: str
    who: str
    user_id: int
    message: str
    private: bool = False
    # Each message the bot sent: its plain text, and as sent (@s and images as CQ codes).
    replies: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    seconds: float = 0.0
    exchanges: list[Exchange] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    fact: int | None = None

    @property
    def reply(self) -> str:
        """Everything the bot sent for the message, one part a line."""
        return "\n".join(self.replies)

    def main(self) -> list[Exchange]:
        """The turn's main-chat exchanges, in order."""
        return [e for e in self.exchanges if e.role == "main"]

    def tool_rounds(self) -> int:
        """Main requests after the first: one per round of tool calls."""
        return max(0, len(self.main()) - 1)

    def invented_tools(self) -> list[str]:
        """Tool calls naming a tool the request did not offer."""
        return [name for e in self.main() for name, _ in e.tool_calls if name not in e.tool_names]

    def repeated_calls(self) -> int:
        """Tool calls identical (name and parsed arguments) to an earlier one of the turn."""
        calls = Counter(
            (name, canonical_arguments(arguments))
            for e in self.main()
            for name, arguments in e.tool_calls
        )
        return sum(count - 1 for count in calls.values())

    def offered_tools(self) -> set[str]:
        """The names of the tools the turn's main requests offered."""
        return {name for e in self.main() for name in e.tool_names}

    def tool_calls_as_text(self) -> int:
        """Main answers whose text holds a tool call or tool response."""
        offered = self.offered_tools()
        return sum(1 for e in self.main() if writes_a_tool_call(e.content, offered))

    def tool_call_names(self) -> list[str]:
        """The tools the model called in this turn, in order."""
        return [name for e in self.main() for name, _ in e.tool_calls]

    def usage_by_role(self) -> dict[str, Usage]:
        """Tokens of the turn's exchanges, by role."""
        usage: dict[str, Usage] = {}
        for exchange in self.exchanges:
            usage[exchange.role] = usage.get(exchange.role, Usage()) + exchange.usage()
        return usage


def canonical_arguments(arguments: str) -> str:
    """Arguments as sorted JSON when they parse, else as sent."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return arguments


def failure_notices() -> tuple[str, ...]:
    """The plugin's failure notices, read from its texts (the names that exist now)."""
    from nonebot_plugin_aimemory import texts

    found = (getattr(texts, name, None) for name in FAILURE_NOTICE_NAMES)
    return tuple(notice for notice in found if isinstance(notice, str) and notice)


def is_failure_notice(text: str, notices: Sequence[str]) -> bool:
    """Whether a sent text is one of the failure notices."""
    return text.strip() in notices


def writes_a_tool_call(text: str, tool_names: Iterable[str]) -> bool:
    """Text holding a tool call or tool response, or naming one of the offered tools (no
    reply to a QQ user has a reason to say `memory_search`)."""
    return bool(TEXT_TOOL_CALL.search(text)) or any(name in text for name in tool_names)


def looks_like_json_or_tool_call(text: str, tool_names: Iterable[str] = ()) -> bool:
    """A reply that is a JSON value, or a tool call or tool response written as text."""
    stripped = text.strip()
    if writes_a_tool_call(stripped, tool_names):
        return True
    if not stripped.startswith(("{", "[")):
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return stripped.startswith("{") and '":' in stripped
    return True


def looks_like_memory_format(text: str) -> bool:
    """A reply that reads like the memory tools' output or the injected memory block."""
    stripped = text.strip()
    return (
        stripped.startswith(MEMORY_FORMAT_STARTS)
        or bool(MEMORY_ID_LINE.search(stripped))
        or "<tool_response>" in stripped
    )


def answered(turn: TurnRecord, notices: Sequence[str]) -> bool:
    """The bot sent at least one text that is not a failure notice."""
    return any(r.strip() and not is_failure_notice(r, notices) for r in turn.replies)


def stock_replies(turns: Iterable[TurnRecord], notices: Sequence[str] = ()) -> list[TurnRecord]:
    """Turns whose reply repeats, word for word, an earlier turn's reply to a different
    message (the plugin's own failure `notices` are counted as such, not here)."""
    first_message: dict[str, set[str]] = {}
    stock = []
    for turn in turns:
        reply = turn.reply.strip()
        if not reply or is_failure_notice(reply, notices):
            continue
        earlier = first_message.setdefault(reply, set())
        if earlier - {turn.message}:
            stock.append(turn)
        earlier.add(turn.message)
    return stock


def transcript_line(turn: TurnRecord) -> dict[str, Any]:
    """One turn as a JSON object: who said what, what was sent, each exchange's role, the
    last messages of its request and its answer."""
    return {
        "scenario": turn.scenario,
        "run": turn.run,
        "phase": turn.phase,
        "kind": turn.kind,
        "who": f"{turn.who}({turn.user_id})",
        "private": turn.private,
        "message": turn.message,
        "replies": turn.replies,
        "sent": turn.sent,
        "seconds": round(turn.seconds, 1),
        "rejected": turn.rejected,
        "exchanges": [exchange_line(e) for e in turn.exchanges],
    }


def exchange_line(exchange: Exchange, last_messages: int = 3) -> dict[str, Any]:
    """An exchange for a transcript: role, status, the request's last messages, the answer."""
    return {
        "role": exchange.role,
        "status": exchange.status,
        "seconds": round(exchange.seconds, 1),
        "tools_offered": sorted(exchange.tool_names),
        "last_messages": (exchange.request.get("messages") or [])[-last_messages:],
        "answer": exchange.message or exchange.error,
        "usage": (exchange.response or {}).get("usage"),
    }


def append_transcript(path: Path, line: dict[str, Any]) -> None:
    """Add one JSON line to a transcript (written as the run goes, so a stopped run keeps
    what it did)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")


def background_line(exchange: Exchange) -> dict[str, Any]:
    """An exchange made outside any turn (a review, an extraction), for a transcript."""
    return {"background": exchange_line(exchange, last_messages=2)}
