"""The memory tools the model calls. Each is built for one session with its scope captured
in a closure: no argument can name another scope, and another scope's id is simply unknown.
A person's own memories (personal.py) are reached through the speaker of the current turn
(engine/turn_context.py), never through an argument: `about="speaker"` saves for whoever sent
the message, and search, update and forget see that person's memories visible here only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import prompts, texts
from ..engine import Tool, ToolError, ToolText, current_speaker, note_save
from ..scopes import Scope
from . import attribution
from .personal import MemoryView, is_anonymous, personal_view
from .requests import without_request
from .rules import MISSING, Missing, clean_user_id
from .service import MemoryService
from .tool_results import (
    SearchPage,
    describe_personal_save,
    describe_save,
    describe_update,
    search_page,
)

SEARCH_LIMIT_DEFAULT = 10
SEARCH_LIMIT_MAX = 50  # with a query; without one the model may list every entry
USER_ID_PROBLEM = "user_id 必须是 QQ 号（纯数字）；要清空请传空字符串"
ANONYMOUS_SPEAKER_NOT_SAVED = (
    "未保存：这条消息是匿名发的，匿名消息没有个人记忆（认不出是谁）。"
    '关于整个聊天的事仍可用 about="chat" 保存。'
)
# What a group's window keeps of a result that showed its speaker's personal memories.
PERSONAL_RESULT_KEPT = "（这里是发言人的个人记忆，只在那一轮可见，已隐去）"
PERSONAL_HITS_KEPT = "（另有 {count} 条发言人的个人记忆，只在那一轮可见，已隐去）"


def memory_tools(memory: MemoryService, scope: str, *, personal: bool = True) -> Iterable[Tool]:
    """The four memory tools, bound to `scope`; with `personal`, they also reach the
    current speaker's personal memories visible here."""
    return [
        Tool(
            "memory_save",
            prompts.MEMORY_SAVE_DESCRIPTION,
            _saver(memory, scope, personal),
            prompts.MEMORY_SAVE_PARAMETERS
            if personal
            else prompts.MEMORY_SAVE_CHAT_ONLY_PARAMETERS,
        ),
        Tool(
            "memory_search",
            # Results of the speaker's own are marked [个人] (texts.memory_line).
            prompts.MEMORY_SEARCH_DESCRIPTION,
            _searcher(memory, scope, personal),
            prompts.memory_search_parameters(
                default_limit=SEARCH_LIMIT_DEFAULT,
                query_limit_max=SEARCH_LIMIT_MAX,
                limit_max=_listing_cap(memory, personal),
            ),
        ),
        Tool(
            "memory_update",
            prompts.MEMORY_UPDATE_DESCRIPTION,
            _updater(memory, scope, personal),
            prompts.MEMORY_UPDATE_PARAMETERS,
        ),
        Tool(
            "memory_forget",
            prompts.MEMORY_FORGET_DESCRIPTION,
            _forgetter(memory, scope, personal),
            prompts.MEMORY_FORGET_PARAMETERS,
        ),
    ]


def _listing_cap(memory: MemoryService, personal: bool) -> int:
    """How many memories a search without a query may list: all a chat and its speaker
    may hold."""
    held = memory.max_entries + (memory.personal_max_entries if personal else 0)
    return max(held, SEARCH_LIMIT_MAX)


def _speakers_view(scope: str, personal: bool) -> MemoryView | None:
    """The speaker's personal memories visible in `scope` (None: off, or outside a turn)."""
    return personal_view(scope, current_speaker()) if personal else None


def _saver(memory: MemoryService, scope: str, personal: bool):
    async def save(arguments: dict[str, Any]) -> str | ToolText:
        """The `memory_save` tool: store a new memory in this scope, or with
        `about="speaker"` in the speaker's personal memories."""
        content = _content_argument(arguments.get("content"))
        if isinstance(content, Missing) or not content.strip():
            raise ToolError("缺少参数 content")
        # A real 1.5B model saved the member's "记住：我在学尤克里里…" word for word, and the
        # guard check then read the stored "记住：…" as an order and hid it. An order to the
        # bot asked to be kept stays as it was, for the rules to refuse.
        content = without_request(content) or content
        speaker_asked = personal and arguments.get("about") == prompts.ABOUT_SPEAKER
        if speaker_asked and is_anonymous(current_speaker()):
            return ANONYMOUS_SPEAKER_NOT_SAVED  # nobody to keep it for (personal.py)
        target, note = _save_target(scope, arguments.get("about"), personal)
        user_id = _user_id_argument(arguments.get("user_id"))
        if target is not None and arguments.get("user_id") is None:
            user_id = _speaker_id()  # a personal memory is about its owner
        outcome = await memory.save(
            target.scope if target is not None else scope,
            content,
            tags=_tags_argument(arguments.get("tags")),
            user_id=user_id,
            source="tool",
            # Told in the owner's private chat: it stays there until the owner says otherwise.
            private=target is not None and target.include_private,
            provenance=attribution.in_turn(content),  # whose words: never the model's say
        )
        note_save()  # saved, or refused for a reason: either way the turn tried (requested.py)
        zone = memory.zone
        if target is None:
            result = describe_save(outcome, memory.max_entries, zone)
        else:
            result = describe_personal_save(outcome, memory.personal_max_entries, target, zone)
        result = f"{result}\n{note}" if note else result
        return _personal_in_shared(result, scope) if target is not None else result

    return save


def _speaker_id() -> str | None:
    """The QQ number of the current turn's speaker, if any."""
    speaker = current_speaker()
    return speaker.user_id if speaker is not None else None


def _save_target(scope: str, about: Any, personal: bool) -> tuple[MemoryView | None, str]:
    """Where a save goes, from its `about`: None for the chat's memories, else the
    speaker's personal view; and the note the result carries when `about` could not be
    followed."""
    if about is None or about == prompts.ABOUT_CHAT:
        return None, ""
    if about != prompts.ABOUT_SPEAKER:
        return None, prompts.about_unknown_note(about)
    if not personal:
        return None, prompts.ABOUT_SPEAKER_OFF_NOTE
    view = _speakers_view(scope, personal)
    if view is None:
        return None, prompts.ABOUT_SPEAKER_UNKNOWN_NOTE
    return view, ""


def _searcher(memory: MemoryService, scope: str, personal: bool):
    async def search(arguments: dict[str, Any]) -> str | ToolText:
        """The `memory_search` tool: this scope's memories and the speaker's visible
        personal ones, ranked together, by query or newest first."""
        query = _optional_text(arguments.get("query"))
        has_query = bool(query and query.strip())
        cap = SEARCH_LIMIT_MAX if has_query else _listing_cap(memory, personal)
        default = SEARCH_LIMIT_DEFAULT if has_query else cap
        limit = _int_argument(arguments.get("limit"), default, low=1, high=cap)
        offset = _int_argument(arguments.get("offset"), 0, low=0, high=None)
        views = [MemoryView(scope)]
        speakers = _speakers_view(scope, personal)
        if speakers is not None:
            views.append(speakers)
        # Memories that fail the guard (rows stored before it caught them) are never shown.
        hits = await memory.search_in(views, query, offset + limit, safe_only=True, feedback=True)
        if not hits:
            return "没有找到相关记忆。" if has_query else "当前会话还没有任何记忆。"
        if offset >= len(hits):
            return f"offset={offset} 超出了范围：一共只有 {len(hits)} 条。"
        page = search_page(hits, offset, memory.zone)
        return _for_shared_window(page) if _is_shared(scope) else page.text

    return search


def _personal_in_shared(result: str, scope: str) -> str | ToolText:
    """A result about the speaker's personal memories, kept as a note in a shared window."""
    return ToolText(result, PERSONAL_RESULT_KEPT) if _is_shared(scope) else result


def _is_shared(scope: str) -> bool:
    """Whether several people share the window of `scope` (a group, any persona): one
    person's memories shown there stay in the turn that asked for them."""
    return Scope.parse(scope).is_group


def _for_shared_window(page: SearchPage) -> str | ToolText:
    """A search page as a shared window keeps it: the chat's lines, and a note in place of
    the speaker's personal ones."""
    personal = sum(1 for hit in page.shown if hit.personal)
    if not personal:
        return page.text
    lines = [line for line, hit in zip(page.lines, page.shown, strict=True) if not hit.personal]
    lines.insert(0, PERSONAL_HITS_KEPT.format(count=personal))
    return ToolText(page.text, "\n".join([*lines, *page.notes]))


def _updater(memory: MemoryService, scope: str, personal: bool):
    async def update(arguments: dict[str, Any]) -> str | ToolText:
        """The `memory_update` tool: change only the fields that were given, of a memory of
        this scope or else of the speaker's visible personal ones."""
        memory_id = _text_argument(arguments, "id")
        fields: dict[str, Any] = {
            # null content counts as omitted: content cannot be cleared, only forgotten.
            "content": _content_argument(arguments.get("content")),
            "tags": _tags_argument(arguments["tags"]) if "tags" in arguments else MISSING,
            "user_id": _user_id_argument(arguments["user_id"])
            if "user_id" in arguments
            else MISSING,
        }
        outcome = await memory.update(scope, memory_id, **fields)
        speakers = _speakers_view(scope, personal)
        if outcome.status != "not_found" or speakers is None:
            return describe_update(outcome, memory_id, memory.zone)
        outcome = await memory.update(
            speakers.scope, memory_id, **fields, include_private=speakers.include_private
        )
        described = describe_update(outcome, memory_id, memory.zone, view=speakers)
        return _personal_in_shared(described, scope)

    return update


def _forgetter(memory: MemoryService, scope: str, personal: bool):
    async def forget(arguments: dict[str, Any]) -> str:
        """The `memory_forget` tool: delete a memory by id, of this scope or else of the
        speaker's visible personal ones."""
        memory_id = _text_argument(arguments, "id")
        deleted = await memory.forget(scope, memory_id, by_person=False)
        speakers = _speakers_view(scope, personal)
        if deleted is None and speakers is not None:
            deleted = await memory.forget(
                speakers.scope,
                memory_id,
                by_person=False,
                include_private=speakers.include_private,
            )
        if deleted is None:
            return texts.memory_not_found(memory_id)
        return f"已删除记忆 #{deleted.id}。"

    return forget


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
