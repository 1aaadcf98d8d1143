"""The memory tools the model calls. Each is built for one session with its scope captured
in a closure: no argument can name another scope, and another scope's id is simply unknown."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .. import prompts, texts
from ..engine.tools import MAX_TOOL_RESULT_CHARS, Tool, ToolError
from ..text.fit import fit_lines
from .rules import MISSING, Missing, clean_user_id
from .service import MemoryService, SaveOutcome, UpdateOutcome

if TYPE_CHECKING:
    from .service import SearchHit

SEARCH_LIMIT_DEFAULT = 10
SEARCH_LIMIT_MAX = 50  # with a query; without one the model may list every entry
# Room left under the engine's cap on tool results for the paging note, so it is never cut.
SEARCH_RESULT_MAX_CHARS = MAX_TOOL_RESULT_CHARS - 500
USER_ID_PROBLEM = "user_id 必须是 QQ 号（纯数字）；要清空请传空字符串"


def memory_tools(memory: MemoryService, scope: str) -> Iterable[Tool]:
    """The four memory tools, bound to `scope`."""
    return [
        Tool(
            "memory_save",
            prompts.MEMORY_SAVE_DESCRIPTION,
            _saver(memory, scope),
            prompts.MEMORY_SAVE_PARAMETERS,
        ),
        Tool(
            "memory_search",
            prompts.MEMORY_SEARCH_DESCRIPTION,
            _searcher(memory, scope),
            prompts.memory_search_parameters(
                default_limit=SEARCH_LIMIT_DEFAULT,
                query_limit_max=SEARCH_LIMIT_MAX,
                limit_max=max(memory.max_entries, SEARCH_LIMIT_MAX),
            ),
        ),
        Tool(
            "memory_update",
            prompts.MEMORY_UPDATE_DESCRIPTION,
            _updater(memory, scope),
            prompts.MEMORY_UPDATE_PARAMETERS,
        ),
        Tool(
            "memory_forget",
            prompts.MEMORY_FORGET_DESCRIPTION,
            _forgetter(memory, scope),
            prompts.MEMORY_FORGET_PARAMETERS,
        ),
    ]


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
    fitted = fit_lines(
        [texts.memory_line(hit.memory) for hit in hits[offset:]],
        SEARCH_RESULT_MAX_CHARS,
        # The first hit is shown whole even over the budget (a memory is at most 2000
        # characters), so paging always moves on.
        shorten=lambda line, _room, rank: line if rank == 0 else None,
    )
    lines = fitted.lines
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
