"""The plugin as the real-model bench runs it: a runtime pointed at the recording proxy
(every role through it), its window-only twin (the baseline) and the driver that sends
events through NoneBot and records each addressed turn.

The window-only twin is made bench-side, without touching the plugin: memory injection,
the reviewer and extraction are off in its config; after `Runtime.start` the ChatBot factory
gets tool sources that offer no tools (so no memory or chat-log tools, and a system prompt
without their rules) and a compressor that cuts the window to the tail a fold would keep
instead of summarising it (`Compressor.truncate_to_tail`)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nonebot.adapters.onebot.v11 import MessageEvent
from nonebot.message import handle_event

from bench import harness as h
from bench.real_model_proxy import Exchange, RecordingProxy, Upstream
from bench.real_model_script import Member
from tests.fakes.bots import RecordingBot

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.compressor import Compaction, Compressor
    from nonebot_plugin_aimemory.engine.messages import Message
    from nonebot_plugin_aimemory.engine.tools import Tool

REQUEST_TIMEOUT_SECONDS = 600.0
# A turn's fields in its transcript line, in order (`who` with the QQ number).
TRANSCRIPT_FIELDS = "scenario run phase kind who private message replies sent seconds rejected"
# The window and nothing else: no memories injected, no old chat lines recalled beside the
# message (with them the twin answered 8 of 10 facts no window of it held), no review and
# no extraction.
WINDOW_ONLY_SETTINGS: dict[str, Any] = {
    "aimemory_memory_auto_inject": False,
    "aimemory_chat_log_recall_rows": 0,
    "aimemory_review_enabled": False,
    "aimemory_memory_extract_on_compact": False,
}


@dataclass(frozen=True)
class Models:
    """The upstream of each model role (the extractor uses the compressor's)."""

    main: Upstream
    compressor: Upstream
    reviewer: Upstream

    def routes(self) -> dict[str, Upstream]:
        """The proxy's upstream of each role."""
        return {
            "main": self.main,
            "compressor": self.compressor,
            "extractor": self.compressor,
            "reviewer": self.reviewer,
        }


class NoTools:
    """A tool source offering nothing: the window-only plugin's memory and chat log."""

    def tools(self, scope: str, /) -> list[Tool]:
        """No tools."""
        return []


def truncating_compressor(model_compressor: Compressor) -> Compressor:
    """A compressor like `model_compressor` that drops what a fold would summarise."""
    from nonebot_plugin_aimemory.engine.compressor import Compressor

    class TruncatingCompressor(Compressor):
        """Cuts the window to the tail a fold keeps; never calls a model."""

        truncations = 0

        async def compact(
            self,
            key: str,
            window: Sequence[Message],
            *,
            keep_recent_tokens: int | None = None,
            fixed_tokens: int = 0,
        ) -> Compaction | None:
            keep = (
                self.tail_tokens(fixed_tokens) if keep_recent_tokens is None else keep_recent_tokens
            )
            self.truncations += 1
            return self.truncate_to_tail(key, window, keep, reason="window-only baseline")

    return TruncatingCompressor(
        model_compressor.llm,
        model_compressor.counter,
        model_compressor.policy,
        prompts=model_compressor.prompts,
    )


@asynccontextmanager
async def model_runtime(
    proxy: RecordingProxy, models: Models, db_path: Path, *, window_only: bool, **settings: Any
) -> AsyncIterator[h.Runtime]:
    """The plugin's runtime on `db_path`, every role through `proxy` (`h.plugin_runtime`);
    the window-only twin when `window_only`."""
    roles = {
        "aimemory_model": models.main.model,
        "aimemory_compressor_model": models.compressor.model,
        "aimemory_review_model": models.reviewer.model,
        "aimemory_request_timeout": REQUEST_TIMEOUT_SECONDS,
    }
    settings = {**roles, **settings, **(WINDOW_ONLY_SETTINGS if window_only else {})}
    started = without_memory if window_only else None
    async with h.plugin_runtime(proxy.base_url, db_path, started, **settings) as runtime:
        yield runtime


def without_memory(runtime: h.Runtime) -> None:
    """Make a started runtime the window-only twin: no tools, a truncating compressor."""
    runtime.chatbots.memory = runtime.chatbots.chat_log = NoTools()
    runtime.compressor = runtime.chatbots.compressor = truncating_compressor(runtime.compressor)


def compressions_of(runtime: h.Runtime) -> int:
    """How many times the window-only compressor truncated (0 for the plugin's own)."""
    return int(getattr(runtime.compressor, "truncations", 0))


@dataclass
class EventClock:
    """Event times: increasing, real-ish gaps, ending about now."""

    now: int
    rng: random.Random

    def next(self) -> int:
        """The next message's time."""
        self.now += self.rng.randint(20, 120)
        return self.now


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

    def line(self) -> dict[str, Any]:
        """The turn as a transcript's JSON line."""
        line = {name: getattr(self, name) for name in TRANSCRIPT_FIELDS.split()}
        exchanges = [exchange_line(e) for e in self.exchanges]
        who, seconds = f"{self.who}({self.user_id})", round(self.seconds, 1)
        return line | {"who": who, "seconds": seconds, "exchanges": exchanges}


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
    """Add one JSON line to a transcript (as the run goes: a stopped run keeps its turns)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")


@dataclass
class Driver:
    """Sends events through NoneBot and records each addressed turn with the exchanges the
    proxy saw meanwhile."""

    proxy: RecordingProxy
    scenario: str
    run: str
    transcript: Path
    bot: RecordingBot = field(default_factory=RecordingBot)
    turns: list[TurnRecord] = field(default_factory=list)

    async def ambient(self, event: MessageEvent) -> None:
        """A message not for the bot (its replies, if any, are not expected)."""
        await handle_event(self.bot, event)

    async def turn(self, event: MessageEvent, record: TurnRecord) -> TurnRecord:
        """An addressed message: handled, timed, with what was sent and the exchanges."""
        sent_before, exchanges_before = len(self.bot.sent), len(self.proxy.exchanges)
        self.proxy.turn = record.index
        started = time.monotonic()
        try:
            await handle_event(self.bot, event)
        finally:
            self.proxy.turn = None
        record.seconds = time.monotonic() - started
        calls = self.bot.sent[sent_before:]
        record.replies = [call.text for call in calls]
        record.sent = [str(call.data.get("message")) for call in calls]
        record.exchanges = [
            e for e in self.proxy.exchanges[exchanges_before:] if e.turn == record.index
        ]
        record.rejected = self.proxy.new_rejections()
        self.proxy.mark_activity()
        self.keep(record)
        return record

    def keep(self, record: TurnRecord) -> None:
        """Keep a finished turn, and write it to the transcript."""
        self.turns.append(record)
        append_transcript(self.transcript, record.line())

    def close(self) -> None:
        """Write the exchanges made outside any turn to the transcript."""
        for exchange in self.background():
            append_transcript(self.transcript, {"background": exchange_line(exchange, 2)})

    def new_record(
        self, phase: str, kind: str, member: Member, message: str, **fields: Any
    ) -> TurnRecord:
        """A record of `member`'s message, numbered in the order of the driver's turns."""
        who, user_id = member.name, member.user_id
        return TurnRecord(
            len(self.turns), self.scenario, self.run, phase, kind, who, user_id, message, **fields
        )

    def background(self) -> list[Exchange]:
        """The exchanges no recorded turn holds: reviews, and extractions that ended after
        the turn that started them."""
        recorded = {id(e) for turn in self.turns for e in turn.exchanges}
        return [e for e in self.proxy.exchanges if id(e) not in recorded]
