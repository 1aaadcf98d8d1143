"""What the memory tools tell the model: a search's page of hits, and the result of a save
or an update, each memory on one line with where it came from (texts.attributed_line)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import TYPE_CHECKING

from .. import prompts, texts
from ..engine import MAX_TOOL_RESULT_CHARS
from ..text import fit_lines

if TYPE_CHECKING:
    from .personal import MemoryView
    from .service import SaveOutcome, SearchHit, UpdateOutcome

# Room left under the engine's cap on tool results for the paging note, so it is never cut.
SEARCH_RESULT_MAX_CHARS = MAX_TOOL_RESULT_CHARS - 500


@dataclass(frozen=True, slots=True)
class SearchPage:
    """The hits a search result shows, their lines, and the paging note (if any)."""

    shown: list[SearchHit]
    lines: list[str]
    notes: list[str]

    @property
    def text(self) -> str:
        """The result as the model reads it: the hits as quoted data in one block, then
        the paging note."""
        block = prompts.framed(
            prompts.MEMORY_RESULTS_OPENING, "\n".join(self.lines), prompts.MEMORY_RESULTS_CLOSING
        )
        return "\n".join([block, *self.notes])


def search_page(hits: Sequence[SearchHit], offset: int, zone: tzinfo) -> SearchPage:
    """Hits from `offset` on, one per line with where each came from, as many as fit the
    result size; when some do not fit, a last line says how many are left and which offset
    shows them."""
    fitted = fit_lines(
        [
            texts.attributed_line(hit.memory, zone, personal=hit.personal, quoted=True)
            for hit in hits[offset:]
        ],
        SEARCH_RESULT_MAX_CHARS,
        # The first hit is shown whole even over the budget (a memory is at most 2000
        # characters), so paging always moves on.
        shorten=lambda line, _room, rank: line if rank == 0 else None,
    )
    shown = [hits[offset + index] for index in fitted.indices]
    left = len(hits) - offset - len(fitted.lines)
    notes = []
    if left > 0:
        next_offset = offset + len(fitted.lines)
        notes.append(f"（还有 {left} 条没有显示，用 offset={next_offset} 继续查看）")
    return SearchPage(shown, fitted.lines, notes)


def describe_save(outcome: SaveOutcome, max_entries: int, zone: tzinfo) -> str:
    """The tool result for a save, written for the model to act on."""
    if outcome.status == "saved" and outcome.memory is not None:
        lines = [f"已保存记忆 {texts.attributed_line(outcome.memory, zone)}"]
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


def describe_personal_save(
    outcome: SaveOutcome, max_entries: int, view: MemoryView, zone: tzinfo
) -> str:
    """The tool result for a save into the speaker's personal memories: as for the chat's,
    lines marked personal, and nothing said of a memory this chat may not see (a private
    one, in a group)."""
    if outcome.status == "saved" and outcome.memory is not None:
        saved = texts.attributed_line(outcome.memory, zone, personal=True)
        lines = [f"已保存记忆 {saved}"]
        if outcome.truncated:
            lines.append("注意：内容超过 2000 字，已截断保存。")
        similar = [m for m in outcome.similar if view.shows(m)]
        if similar:
            shown = "；".join(texts.memory_line(m, personal=True) for m in similar)
            lines.append(
                f"发现相似的记忆：{shown}。如果说的是同一件事，请用 memory_update 合并成一条，"
                "再用 memory_forget 删除多余的。"
            )
        return "\n".join(lines)
    if outcome.status == "duplicate" and outcome.memory is not None:
        if not view.shows(outcome.memory):
            return "这位发言人的个人记忆里已有相同内容，无需重复保存。"
        return f"相同内容的记忆已存在：#{outcome.memory.id}，无需重复保存。"
    if outcome.status == "full":
        return (
            f"未保存：这位发言人的个人记忆已满（{max_entries} 条）。请先用 memory_update 合并"
            "相近的记忆，或用 memory_forget 删除过时的记忆，再保存。"
        )
    return describe_save(outcome, max_entries, zone)


def describe_update(
    outcome: UpdateOutcome, memory_id: str, zone: tzinfo, *, view: MemoryView | None = None
) -> str:
    """The model-facing result of a memory update (`view`: the speaker's personal memories
    it was found in, if not the chat's)."""
    if outcome.status == "not_found":
        return texts.memory_not_found(memory_id)
    if outcome.status == "updated" and outcome.memory is not None:
        note = "（内容超过 2000 字，已截断）" if outcome.truncated else ""
        line = texts.attributed_line(outcome.memory, zone, personal=view is not None)
        return f"已更新记忆 {line}{note}"
    if outcome.status == "duplicate" and outcome.memory is not None:
        if view is not None and not view.shows(outcome.memory):
            return "未更新：这位发言人的个人记忆里已有相同内容，请改用 memory_forget 删除这一条。"
        return f"未更新：与已有记忆 #{outcome.memory.id} 内容相同，请改用 memory_forget 删除多余的一条。"
    if outcome.status == "tombstoned":
        return "未更新：这个内容已被用户手动删除过，不能再保存。"
    if outcome.status == "empty":
        return "未更新：content 不能为空；要删除请用 memory_forget。"
    return f"未更新：{outcome.reason}。"
