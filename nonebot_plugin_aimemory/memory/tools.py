"""The memory tools the model calls. Each is built for one session with its scope captured
in a closure: no argument can name another scope, and another scope's id is simply unknown."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .. import texts
from ..engine.tools import Tool, ToolError
from .service import (
    MISSING,
    MemoryService,
    Missing,
    SaveOutcome,
    UpdateOutcome,
    clean_user_id,
)

if TYPE_CHECKING:
    from ..runtime import Runtime
    from .service import SearchHit

SEARCH_LIMIT_DEFAULT = 10
SEARCH_LIMIT_MAX = 50  # with a query; without one the model may list every entry
# Below the engine's 8000-character cap on tool results, so the paging note is never cut.
SEARCH_RESULT_MAX_CHARS = 7500
USER_ID_PROBLEM = "user_id 必须是 QQ 号（纯数字）；要清空请传空字符串"
_STRING = {"type": "string"}
_TAGS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "可选：1~3 个分类标签，如“饮食”“生日”“约定”",
}
_USER_ID = {"type": "string", "description": "可选：这条记忆是关于哪位用户的 QQ 号（纯数字）"}

SAVE_DESCRIPTION = (
    "保存一条长期记忆。记忆只属于当前这个群聊或私聊，其他群和私聊看不到。"
    "当对方说出值得长期记住的信息时使用：偏好、名字或称呼、个人情况、约定、计划、重要事件等。"
    "每条记忆必须脱离当前对话也能看懂：写清主语（昵称和 QQ 号）、时间和具体内容，"
    "例如“小明(12345)吃素，不吃任何肉类”。"
    "不要保存寒暄、一次性的问题、临时情绪、未确认的猜测，以及证件号、银行卡号、密码等敏感信息。"
)
SEARCH_DESCRIPTION = (
    "搜索当前会话的长期记忆。不带 query 时按时间列出全部（从新到旧）；带 query 时按相关度排序。"
    "回答涉及以前提到过的人、偏好、约定时，先搜索。结果太长时会说明还剩多少条，用 offset 继续查看。"
)
UPDATE_DESCRIPTION = (
    "按编号修改一条已有记忆：记忆过时或有误时更正它；两条记忆说的是同一件事时，把内容合并到一条。"
    "省略的字段保持不变（content 传 null 也算省略）；tags 传空数组、user_id 传空字符串表示清空。"
    "content 不能为空；user_id 只能是 QQ 号。"
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
                        "maximum": max(memory.max_entries, SEARCH_LIMIT_MAX),
                        "description": (
                            f"可选：最多返回几条。带 query 时默认 {SEARCH_LIMIT_DEFAULT}、"
                            f"最多 {SEARCH_LIMIT_MAX}；不带 query 时默认全部"
                        ),
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "可选：跳过前面几条，用于翻页，默认 0",
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
        content = _content_argument(arguments.get("content"))
        if isinstance(content, Missing) or not content.strip():
            raise ToolError("缺少参数 content")
        outcome = await memory.save(
            scope,
            content,
            tags=_tags_argument(arguments.get("tags")),
            user_id=_user_id_argument(arguments.get("user_id")),
            source="tool",
        )
        return describe_save(outcome, memory.max_entries)

    return save


def _searcher(memory: MemoryService, scope: str):
    async def search(arguments: dict[str, Any]) -> str:
        """The `memory_search` tool: this scope's memories, by query or newest first."""
        query = _optional_text(arguments.get("query"))
        has_query = bool(query and query.strip())
        cap = SEARCH_LIMIT_MAX if has_query else max(memory.max_entries, SEARCH_LIMIT_MAX)
        default = SEARCH_LIMIT_DEFAULT if has_query else cap
        limit = _int_argument(arguments.get("limit"), default, low=1, high=cap)
        offset = _int_argument(arguments.get("offset"), 0, low=0, high=None)
        # Memories that fail the guard (rows stored before it caught them) are never shown.
        hits = await memory.search(scope, query, offset + limit, safe_only=True)
        if not hits:
            return "没有找到相关记忆。" if has_query else "当前会话还没有任何记忆。"
        if offset >= len(hits):
            return f"offset={offset} 超出了范围：一共只有 {len(hits)} 条。"
        return search_page(hits, offset)

    return search


def _updater(memory: MemoryService, scope: str):
    async def update(arguments: dict[str, Any]) -> str:
        """The `memory_update` tool: change only the fields that were given."""
        memory_id = _text_argument(arguments, "id")
        outcome = await memory.update(
            scope,
            memory_id,
            # null content counts as omitted: content cannot be cleared, only forgotten.
            content=_content_argument(arguments.get("content")),
            tags=_tags_argument(arguments["tags"]) if "tags" in arguments else MISSING,
            user_id=_user_id_argument(arguments["user_id"]) if "user_id" in arguments else MISSING,
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


def search_page(hits: Sequence[SearchHit], offset: int) -> str:
    """Hits from `offset` on, one per line, as many as fit the result size; when some do
    not fit, a last line says how many are left and which offset shows them."""
    lines: list[str] = []
    used = 0
    for hit in hits[offset:]:
        line = texts.memory_line(hit.memory)
        if lines and used + len(line) + 1 > SEARCH_RESULT_MAX_CHARS:
            break
        lines.append(line)
        used += len(line) + 1
    left = len(hits) - offset - len(lines)
    if left > 0:
        next_offset = offset + len(lines)
        lines.append(f"（还有 {left} 条没有显示，用 offset={next_offset} 继续查看）")
    return "\n".join(lines)


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


def _content_argument(value: Any) -> str | Missing:
    """The content a tool was given; null is the same as leaving it out."""
    if value is None:
        return MISSING
    if not isinstance(value, str):
        raise ToolError("content 必须是字符串")
    return value


def _user_id_argument(value: Any) -> str | None:
    """A QQ number, or None (null or empty clears it). Anything else is refused rather than
    silently dropped: a nickname here would otherwise wipe the stored number."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ToolError(USER_ID_PROBLEM)
    number = clean_user_id(value)
    if number is None:
        raise ToolError(USER_ID_PROBLEM)
    return number


def _tags_argument(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [part for part in value.replace("，", ",").split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return [str(item) for item in value]
    raise ToolError("tags 必须是字符串数组")


def _int_argument(value: Any, default: int, *, low: int, high: int | None) -> int:
    """An integer argument clamped to [low, high]; missing or unreadable gives `default`."""
    try:
        number = int(value) if value is not None else default
    except (TypeError, ValueError):
        number = default
    number = max(low, number)
    return number if high is None else min(number, high)
