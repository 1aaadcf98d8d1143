"""Tools the model may call, and the registry that executes them.

A registry belongs to one session: providers build its tools with the session's scope
captured in closures, so no tool argument can ever point it at another conversation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .messages import Message, ToolCall, tool_result
from .tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter
from .turn_trace import note_tool_uses

logger = logging.getLogger("nonebot_plugin_aimemory")

# The one cap on a tool result: tools that size their own output (chat log, memory search)
# derive their budgets from it, so the registry never has to cut them.
MAX_TOOL_RESULT_CHARS = 8000
# Calls run per round; the rest are answered with a refusal telling the model to call fewer.
MAX_TOOL_CALLS_PER_ROUND = 16
# Refused calls kept in the history beyond those run: enough for the model to see which of
# its calls did not run; answering every call of a flood of 2 000 would cost more tokens
# than the whole budget, so calls beyond these are dropped from the assistant message.
MAX_REFUSED_TOOL_CALLS_KEPT = MAX_TOOL_CALLS_PER_ROUND
MAX_TOOL_CALLS_KEPT_PER_ROUND = MAX_TOOL_CALLS_PER_ROUND + MAX_REFUSED_TOOL_CALLS_KEPT
# What a result cut to fit its round's share ends with.
ROUND_CUT_NOTE = "\n…（本轮结果太多，已截断，原有 {chars} 字）"


@dataclass(frozen=True, slots=True)
class ToolText:
    """A tool's result: `text` for the requests of the turn that called it, and `kept`,
    when given, what the window keeps in its place afterwards. A result that carries one
    person's memories into a window others share stays in its own turn: later turns (and
    the compressor) see only `kept`, while the call still has its result message."""

    text: str
    kept: str | None = None

    def capped(self) -> ToolText:
        """Both texts within MAX_TOOL_RESULT_CHARS."""
        kept = None if self.kept is None else cap_tool_result(self.kept)
        return ToolText(cap_tool_result(self.text), kept)


ToolHandler = Callable[[dict[str, Any]], Awaitable[str | ToolText]]


class ToolError(Exception):
    """A tool's refusal or failure that the model should read and act on."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A function the model can call: name, description for the model, JSON-schema parameters."""

    name: str
    description: str
    handler: ToolHandler
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def spec(self) -> dict[str, Any]:
        """The tool in the OpenAI `tools` format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True, slots=True)
class ToolRound:
    """The calls of one assistant message as the round keeps them, ids unique: those that
    run, those answered with a refusal, and how many the model asked for."""

    run: tuple[ToolCall, ...]
    refused: tuple[ToolCall, ...]
    requested: int

    @staticmethod
    def of(
        calls: Sequence[ToolCall], taken_ids: Iterable[str] = (), *, capacity: int | None = None
    ) -> ToolRound:
        """Bound `calls` to what a round runs and keeps, at most `capacity` calls in all when
        given (how many answers the budget still holds); ids are made unique among them and
        against `taken_ids` (those already in the conversation)."""
        limit = MAX_TOOL_CALLS_KEPT_PER_ROUND
        if capacity is not None:
            limit = max(1, min(limit, capacity))
        kept = unique_call_ids(calls[:limit], taken_ids)
        run = min(MAX_TOOL_CALLS_PER_ROUND, len(kept))
        if run == len(kept) < len(calls) and run > 1:
            run -= 1  # one refusal tells the model that calls were left out
        return ToolRound(kept[:run], kept[run:], len(calls))

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every call the round keeps, in the model's order: the assistant message's calls."""
        return self.run + self.refused

    @property
    def dropped(self) -> int:
        """Calls the model asked for that the round neither runs nor keeps."""
        return self.requested - len(self.calls)

    def refusal(self) -> str:
        """The result of a call beyond the per-round limit."""
        text = (
            f"错误：本轮调用了 {self.requested} 个工具，只执行了前 {len(self.run)} 个"
            f"（每轮最多 {MAX_TOOL_CALLS_PER_ROUND} 个），这个没有执行。请一次少调用一些。"
        )
        if self.dropped:
            text += f"第 {len(self.calls) + 1} 个起的 {self.dropped} 个调用已省略。"
        return text


def unique_call_ids(
    calls: Sequence[ToolCall], taken_ids: Iterable[str] = ()
) -> tuple[ToolCall, ...]:
    """`calls` with every id non-empty and unique among them and `taken_ids`: the first use
    of an id keeps it, a repeat (or an empty id) gets a numbered suffix no other call uses
    (`call_1`, `call_1_2`), so each call is run and answered once. The suffix stays within
    `[A-Za-z0-9_-]`, the ids the strictest gateways accept."""
    taken = set(taken_ids)
    # The model's own ids are never given to another call, wherever they come in the list.
    used = taken | {call.id for call in calls}
    kept: set[str] = set()
    next_suffix: dict[str, int] = {}
    result: list[ToolCall] = []
    for call in calls:
        call_id = call.id
        if not call_id or call_id in taken or call_id in kept:
            stem = call_id or "call"
            suffix = next_suffix.get(stem, 2 if call_id else 1)
            while f"{stem}_{suffix}" in used:
                suffix += 1
            next_suffix[stem] = suffix + 1
            call_id = f"{stem}_{suffix}"
            used.add(call_id)
        kept.add(call_id)
        result.append(call if call_id == call.id else ToolCall(call_id, call.name, call.arguments))
    return tuple(result)


class ToolRegistry:
    """The tools of one session, executed by name with errors turned into results."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs_json: bytes | None = None
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool; a second tool with the same name is a programming error."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool
        self._specs_json = None

    @property
    def names(self) -> list[str]:
        """Registered tool names, in registration order."""
        return list(self._tools)

    def specs_json(self) -> bytes | None:
        """The `tools` request field, encoded once (byte-identical from turn to turn)."""
        if not self._tools:
            return None
        if self._specs_json is None:
            specs = [tool.spec() for tool in self._tools.values()]
            self._specs_json = json.dumps(specs, ensure_ascii=False, separators=(",", ":")).encode()
        return self._specs_json

    async def execute(self, call: ToolCall, *, context: str = "") -> ToolText:
        """Run one call; unknown tools, bad arguments and failures become error results."""
        tool = self._tools.get(call.name)
        if tool is None:
            available = "、".join(self._tools) or "无"
            return ToolText(f"错误：没有名为 {call.name} 的工具。可用工具：{available}")
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError:
            return ToolText("错误：参数不是合法的 JSON，请重新调用。")
        if not isinstance(arguments, dict):
            return ToolText("错误：参数必须是 JSON 对象。")
        try:
            result = await tool.handler(arguments)
        except ToolError as exc:
            return ToolText(f"错误：{exc}")
        except Exception as exc:  # a broken tool must not end the turn
            logger.exception("tool %s failed (%s)", call.name, context)
            return ToolText(f"错误：工具执行失败（{type(exc).__name__}）。")
        return (result if isinstance(result, ToolText) else ToolText(result)).capped()

    async def run_round(
        self,
        reply: Message,
        room_tokens: int | None,
        taken_ids: Iterable[str],
        counter: TokenCounter,
        *,
        context: str = "",
    ) -> tuple[Message, list[Message], list[Message | None]]:
        """Run the round `reply` asks for; returns the reply as the history keeps it (ids
        unique against `taken_ids`, calls bounded by the limit and by the answers
        `room_tokens` holds), one result per call, all within that room (None: no
        budget), and what the window keeps of each result when not the result itself
        (ToolText.kept)."""
        capacity = None if room_tokens is None else room_tokens // result_floor_tokens(counter)
        tool_round = ToolRound.of(reply.tool_calls, taken_ids, capacity=capacity)
        if len(tool_round.run) < tool_round.requested:
            logger.warning(
                "%s: the model made %d tool calls in one round; %d run, %d refused, %d dropped",
                context,
                tool_round.requested,
                len(tool_round.run),
                len(tool_round.refused),
                tool_round.dropped,
            )
        outputs = await self.execute_round(tool_round, context=context)
        texts = [output.text for output in outputs]
        if room_tokens is not None:
            framing = len(texts) * MESSAGE_OVERHEAD_TOKENS
            texts = fit_round_results(texts, room_tokens - framing, counter)
        calls = tool_round.calls
        note_tool_uses(calls, texts)
        results = [tool_result(c, t) for c, t in zip(calls, texts, strict=True)]
        kept = [
            None if output.kept is None else tool_result(call, output.kept)
            for call, output in zip(calls, outputs, strict=True)
        ]
        return reply.with_tool_calls(calls), results, kept

    async def execute_round(self, tool_round: ToolRound, *, context: str = "") -> list[ToolText]:
        """The results of a round's calls, in order: the calls to run are run one after the
        other (a later call may depend on an earlier one), the refused get the refusal."""
        results = [await self.execute(call, context=context) for call in tool_round.run]
        return results + [ToolText(tool_round.refusal())] * len(tool_round.refused)


def cap_tool_result(text: str, limit: int = MAX_TOOL_RESULT_CHARS) -> str:
    """Keep tool output within `limit` characters, saying so when cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n…（结果过长，已截断，共 {len(text)} 字）"


def fit_round_results(texts: Sequence[str], room_tokens: int, counter: TokenCounter) -> list[str]:
    """The results of one round cut so that together they cost at most `room_tokens`: the
    longest are cut first, all to the same size, each saying it was cut."""
    sizes = [counter.count(text) for text in texts]
    if sum(sizes) <= room_tokens:
        return list(texts)
    share = _equal_share(sizes, room_tokens)
    return [
        text if size <= share else _cut_to_tokens(text, size, share, counter)
        for text, size in zip(texts, sizes, strict=True)
    ]


def result_floor_tokens(counter: TokenCounter) -> int:
    """What one result costs at the least: its framing and the note of a result cut to
    nothing. A round holds as many calls as the room left has floors."""
    note = ROUND_CUT_NOTE.format(chars=MAX_TOOL_RESULT_CHARS)
    return MESSAGE_OVERHEAD_TOKENS + counter.count(note)


def _equal_share(sizes: Sequence[int], room_tokens: int) -> int:
    """The largest `share` with sum(min(size, share)) <= room_tokens: short results stay
    whole and leave what they do not use to the long ones."""
    remaining = max(room_tokens, 0)
    ordered = sorted(sizes)
    for index, size in enumerate(ordered):
        share = remaining // (len(ordered) - index)
        if size > share:
            return share
        remaining -= size
    return ordered[-1] if ordered else 0


def _cut_to_tokens(text: str, size: int, share: int, counter: TokenCounter) -> str:
    """`text` (`size` tokens) cut to about `share` tokens, note included (a share smaller
    than the note leaves the note alone)."""
    note = ROUND_CUT_NOTE.format(chars=len(text))
    keep = len(text) * max(share - counter.count(note), 0) // max(size, 1)
    cut = text[:keep] + note
    # Token density varies along a text: shorten until the count holds.
    while keep > 0 and counter.count(cut) > share:
        keep = min(keep - 1, keep * 9 // 10)
        cut = text[:keep] + note
    return cut
