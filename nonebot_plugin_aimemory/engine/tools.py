"""Tools the model may call, and the registry that executes them.

A registry belongs to one session: providers build its tools with the session's scope
captured in closures, so no tool argument can ever point it at another conversation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .messages import ToolCall

logger = logging.getLogger("nonebot_plugin_aimemory")

# The one cap on a tool result: tools that size their own output (chat log, memory search)
# derive their budgets from it, so the registry never has to cut them.
MAX_TOOL_RESULT_CHARS = 8000
ToolHandler = Callable[[dict[str, Any]], Awaitable[str]]


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

    async def execute(self, call: ToolCall, *, context: str = "") -> str:
        """Run one call; unknown tools, bad arguments and failures become error results."""
        tool = self._tools.get(call.name)
        if tool is None:
            available = "、".join(self._tools) or "无"
            return f"错误：没有名为 {call.name} 的工具。可用工具：{available}"
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError:
            return "错误：参数不是合法的 JSON，请重新调用。"
        if not isinstance(arguments, dict):
            return "错误：参数必须是 JSON 对象。"
        try:
            result = await tool.handler(arguments)
        except ToolError as exc:
            return f"错误：{exc}"
        except Exception as exc:  # a broken tool must not end the turn
            logger.exception("tool %s failed (%s)", call.name, context)
            return f"错误：工具执行失败（{type(exc).__name__}）。"
        return cap_tool_result(result)


def cap_tool_result(text: str, limit: int = MAX_TOOL_RESULT_CHARS) -> str:
    """Keep tool output within `limit` characters, saying so when cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n…（结果过长，已截断，共 {len(text)} 字）"
