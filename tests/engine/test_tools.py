"""`ToolRegistry` runs the model's calls by name and turns every failure into a result the
model can read, never into an exception that ends the turn."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.engine.messages import ToolCall
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry

CITY_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


async def weather(arguments: dict[str, Any]) -> str:
    return f"{arguments['city']}：晴，25 度"


async def refuse(arguments: dict[str, Any]) -> str:
    from nonebot_plugin_aimemory.engine.tools import ToolError

    raise ToolError("这条记忆不属于当前会话")


async def crash(arguments: dict[str, Any]) -> str:
    raise RuntimeError("database is locked")


def call(name: str, arguments: str) -> ToolCall:
    from nonebot_plugin_aimemory.engine.messages import ToolCall

    return ToolCall("call_1", name, arguments)


def registry_with(*handlers: tuple[str, Any]) -> ToolRegistry:
    from nonebot_plugin_aimemory.engine.tools import Tool, ToolRegistry

    return ToolRegistry(Tool(name, f"{name} tool", handler) for name, handler in handlers)


async def test_known_tool_runs_with_its_arguments() -> None:
    from nonebot_plugin_aimemory.engine.tools import Tool, ToolRegistry

    registry = ToolRegistry([Tool("get_weather", "天气", weather, CITY_PARAMETERS)])

    result = (await registry.execute(call("get_weather", '{"city": "北京"}'))).text

    assert result == "北京：晴，25 度"


async def test_empty_arguments_mean_no_arguments() -> None:
    seen: list[dict[str, Any]] = []

    async def record(arguments: dict[str, Any]) -> str:
        seen.append(arguments)
        return "ok"

    registry = registry_with(("get_time", record))

    assert (await registry.execute(call("get_time", ""))).text == "ok"
    assert seen == [{}]


async def test_unknown_tool_result_names_the_available_tools() -> None:
    registry = registry_with(("get_weather", weather), ("get_time", weather))

    result = (await registry.execute(call("search_web", "{}"))).text

    assert result.startswith("错误")
    assert "search_web" in result
    assert "get_weather" in result
    assert "get_time" in result


async def test_invalid_json_arguments_give_an_error_result() -> None:
    registry = registry_with(("get_weather", weather))

    result = (await registry.execute(call("get_weather", '{"city": 北京'))).text

    assert result.startswith("错误")
    assert "JSON" in result


@pytest.mark.parametrize("arguments", ['["北京"]', '"北京"', "42", "null"])
async def test_non_object_arguments_give_an_error_result(arguments: str) -> None:
    registry = registry_with(("get_weather", weather))

    result = (await registry.execute(call("get_weather", arguments))).text

    assert result.startswith("错误")
    assert "对象" in result


async def test_tool_error_message_reaches_the_model() -> None:
    registry = registry_with(("forget", refuse))

    result = (await registry.execute(call("forget", "{}"))).text

    assert result == "错误：这条记忆不属于当前会话"


async def test_crashing_handler_gives_an_error_result_not_an_exception() -> None:
    registry = registry_with(("remember", crash))

    result = (await registry.execute(call("remember", "{}"))).text

    assert result.startswith("错误")
    assert "RuntimeError" in result
    # internals stay in the log, not in what the model reads
    assert "database is locked" not in result


async def test_long_result_is_capped_with_a_note() -> None:
    from nonebot_plugin_aimemory.engine.tools import MAX_TOOL_RESULT_CHARS

    async def verbose(arguments: dict[str, Any]) -> str:
        return "字" * (MAX_TOOL_RESULT_CHARS + 1000)

    registry = registry_with(("dump", verbose))

    result = (await registry.execute(call("dump", "{}"))).text

    kept, note = result[:MAX_TOOL_RESULT_CHARS], result[MAX_TOOL_RESULT_CHARS:]
    assert MAX_TOOL_RESULT_CHARS == 8000
    assert kept == "字" * MAX_TOOL_RESULT_CHARS
    assert note.startswith("\n")
    assert "截断" in note
    assert str(MAX_TOOL_RESULT_CHARS + 1000) in note


async def test_result_at_the_cap_is_kept_whole() -> None:
    from nonebot_plugin_aimemory.engine.tools import MAX_TOOL_RESULT_CHARS

    async def exact(arguments: dict[str, Any]) -> str:
        return "x" * MAX_TOOL_RESULT_CHARS

    registry = registry_with(("dump", exact))

    assert (await registry.execute(call("dump", "{}"))).text == "x" * MAX_TOOL_RESULT_CHARS


def test_specs_json_is_the_same_bytes_every_time() -> None:
    from nonebot_plugin_aimemory.engine.tools import Tool, ToolRegistry

    registry = ToolRegistry([Tool("get_weather", "查询天气", weather, CITY_PARAMETERS)])

    first = registry.specs_json()

    assert first is not None
    assert registry.specs_json() == first
    rebuilt = ToolRegistry([Tool("get_weather", "查询天气", weather, CITY_PARAMETERS)])
    assert rebuilt.specs_json() == first
    assert json.loads(first) == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "查询天气",
                "parameters": CITY_PARAMETERS,
            },
        }
    ]


def test_registering_a_tool_refreshes_specs_json() -> None:
    from nonebot_plugin_aimemory.engine.tools import Tool

    registry = registry_with(("get_weather", weather))
    before = registry.specs_json()

    registry.register(Tool("get_time", "时间", weather))

    after = registry.specs_json()
    assert after != before
    assert [spec["function"]["name"] for spec in json.loads(after or b"")] == [
        "get_weather",
        "get_time",
    ]


def test_no_tools_means_no_specs() -> None:
    from nonebot_plugin_aimemory.engine.tools import ToolRegistry

    assert ToolRegistry().specs_json() is None


def test_registering_a_name_twice_is_refused() -> None:
    from nonebot_plugin_aimemory.engine.tools import Tool

    registry = registry_with(("get_weather", weather))

    with pytest.raises(ValueError, match="get_weather"):
        registry.register(Tool("get_weather", "again", weather))
