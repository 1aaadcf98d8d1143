"""The memory tools the model calls. Each is built for one session with its scope captured
in a closure: no argument can name another scope, and another scope's id is simply unknown."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import texts
from .engine.tools import Tool, ToolError
from .memory import MISSING, MemoryService, SaveOutcome, UpdateOutcome

if TYPE_CHECKING:
    from .runtime import Runtime

SEARCH_LIMIT_MAX = 50
_STRING = {"type": "string"}
_TAGS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "可选：1~3 个分类标签，如“饮食”“生日”“约定”",
}
_USER_ID = {"type": "string", "description": "可选：这条记忆是关于哪位用户的 QQ 号"}

SAVE_DESCRIPTION = (
    "保存一条长期记忆。记忆只属于当前这个群聊或私聊，其他群和私聊看不到。"
    "当对方说出值得长期记住的信息时使用：偏好、名字或称呼、个人情况、约定、计划、重要事件等。"
    "每条记忆必须脱离当前对话也能看懂：写清主语（昵称和 QQ 号）、时间和具体内容，"
    "例如“小明(12345)吃素，不吃任何肉类”。"
    "不要保存寒暄、一次性的问题、临时情绪、未确认的猜测，以及证件号、银行卡号、密码等敏感信息。"
)
SEARCH_DESCRIPTION = (
    "搜索当前会话的长期记忆。不带 query 时按时间列出全部；带 query 时按相关度排序。"
    "回答涉及以前提到过的人、偏好、约定时，先搜索。"
)
UPDATE_DESCRIPTION = (
    "按编号修改一条已有记忆：记忆过时或有误时更正它；两条记忆说的是同一件事时，把内容合并到一条。"
    "省略的字段保持不变；tags 传空数组、user_id 传空字符串表示清空。content 不能为空。"
)
FORGET_DESCRIPTION = "按编号删除一条记忆：错误、过时或与其他记忆重复的记忆。"


def memory_tools(runtime: Runtime, scope: str) -> Iterable[Tool]:
    """The four memory tools bound to `scope` (none when long-term memory is off)."""
    memory = runtime.memory
    if memory is None:
        return []
    return [
        Tool(
            "memory_save",
            SAVE_DESCRIPTION,
            _saver(memory, scope),
            _object(
                {
                    "content": {**_STRING, "description": "要记住的内容，一句完整独立的话"},
                    "tags": _TAGS,
                    "user_id": _USER_ID,
                },
                ["content"],
            ),
        ),
        Tool(
            "memory_search",
            SEARCH_DESCRIPTION,
            _searcher(memory, scope),
            _object(
                {
                    "query": {**_STRING, "description": "可选：关键词"},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": SEARCH_LIMIT_MAX,
                        "description": "最多返回几条，默认 10",
                    },
                },
                [],
            ),
        ),
        Tool(
            "memory_update",
            UPDATE_DESCRIPTION,
            _updater(memory, scope),
            _object(
                {
                    "id": {**_STRING, "description": "记忆编号，如 ab3d"},
                    "content": _STRING,
                    "tags": _TAGS,
                    "user_id": _USER_ID,
                },
                ["id"],
            ),
        ),
        Tool(
            "memory_forget",
            FORGET_DESCRIPTION,
            _forgetter(memory, scope),
            _object({"id": {**_STRING, "description": "记忆编号，如 ab3d"}}, ["id"]),
        ),
    ]


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def _saver(memory: MemoryService, scope: str):
    async def save(arguments: dict[str, Any]) -> str:
        """The `memory_save` tool: store a new memory in this scope."""
        content = _text_argument(arguments, "content")
        outcome = await memory.save(
            scope,
            content,
            tags=_tags_argument(arguments.get("tags")),
            user_id=_optional_text(arguments.get("user_id")),
            source="tool",
        )
        return describe_save(outcome, memory.max_entries)

    return save


def _searcher(memory: MemoryService, scope: str):
    async def search(arguments: dict[str, Any]) -> str:
        """The `memory_search` tool: this scope's memories, by query or newest first."""
        query = _optional_text(arguments.get("query"))
        limit = _limit_argument(arguments.get("limit"))
        hits = await memory.search(scope, query, limit)
        if not hits:
            return "没有找到相关记忆。" if query else "当前会话还没有任何记忆。"
        return "\n".join(texts.memory_line(hit.memory) for hit in hits)

    return search


def _updater(memory: MemoryService, scope: str):
    async def update(arguments: dict[str, Any]) -> str:
        """The `memory_update` tool: change only the fields that were given."""
        memory_id = _text_argument(arguments, "id")
        outcome = await memory.update(
            scope,
            memory_id,
            content=str(arguments["content"]) if "content" in arguments else MISSING,
            tags=_tags_argument(arguments["tags"]) if "tags" in arguments else MISSING,
            user_id=_optional_text(arguments["user_id"]) if "user_id" in arguments else MISSING,
        )
        return describe_update(outcome, memory_id)

    return update


def _forgetter(memory: MemoryService, scope: str):
    async def forget(arguments: dict[str, Any]) -> str:
        """The `memory_forget` tool: delete a memory by id."""
        memory_id = _text_argument(arguments, "id")
        deleted = await memory.forget(scope, memory_id, by_person=False)
        if deleted is None:
            return texts.memory_not_found(memory_id)
        return f"已删除记忆 #{deleted.id}。"

    return forget


def describe_save(outcome: SaveOutcome, max_entries: int) -> str:
    """The tool result for a save, written for the model to act on."""
    if outcome.status == "saved" and outcome.memory is not None:
        lines = [f"已保存记忆 {texts.memory_line(outcome.memory)}"]
        if outcome.truncated:
            lines.append("注意：内容超过 2000 字，已截断保存。")
        if outcome.similar:
            similar = "；".join(texts.memory_line(m) for m in outcome.similar)
            lines.append(
                f"发现相似的记忆：{similar}。如果说的是同一件事，请用 memory_update 合并成一条，"
                "再用 memory_forget 删除多余的。"
            )
        return "\n".join(lines)
    if outcome.status == "duplicate" and outcome.memory is not None:
        return f"相同内容的记忆已存在：#{outcome.memory.id}，无需重复保存。"
    if outcome.status == "tombstoned":
        return "未保存：这条内容已被用户手动删除，不能再次保存。"
    if outcome.status == "full":
        return (
            f"未保存：本会话的记忆已满（{max_entries} 条）。请先用 memory_update 合并相近的记忆，"
            "或用 memory_forget 删除过时的记忆，再保存。"
        )
    if outcome.status == "empty":
        return "未保存：内容为空。"
    return f"未保存：{outcome.reason}。"


def describe_update(outcome: UpdateOutcome, memory_id: str) -> str:
    """The model-facing result of a memory update."""
    if outcome.status == "not_found":
        return texts.memory_not_found(memory_id)
    if outcome.status == "updated" and outcome.memory is not None:
        note = "（内容超过 2000 字，已截断）" if outcome.truncated else ""
        return f"已更新记忆 {texts.memory_line(outcome.memory)}{note}"
    if outcome.status == "duplicate" and outcome.memory is not None:
        return f"未更新：与已有记忆 #{outcome.memory.id} 内容相同，请改用 memory_forget 删除多余的一条。"
    if outcome.status == "tombstoned":
        return "未更新：这个内容已被用户手动删除过，不能再保存。"
    if outcome.status == "empty":
        return "未更新：content 不能为空；要删除请用 memory_forget。"
    return f"未更新：{outcome.reason}。"


def _text_argument(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ToolError(f"缺少参数 {name}")
    return str(value)


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _tags_argument(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [part for part in value.replace("，", ",").split(",") if part.strip()]
    if isinstance(value, list):
        return [str(item) for item in value]
    raise ToolError("tags 必须是字符串数组")


def _limit_argument(value: Any) -> int:
    try:
        limit = int(value) if value is not None else 10
    except (TypeError, ValueError):
        limit = 10
    return max(1, min(limit, SEARCH_LIMIT_MAX))
