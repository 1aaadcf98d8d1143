"""A chat's log as the panel shows it: the newest rows, or the best matches of a search.
The log is the chat's (`g:123`), whichever account or persona a page is of; the bot's rows
name the account that spoke. A person's memories have no chat log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...chatlog import RecordedChat
from ..scopes import Scope

if TYPE_CHECKING:
    from ...runtime import Runtime
    from ...store import ChatRow

CHAT_LOG_DEFAULT_LIMIT = 50
CHAT_LOG_MAX_LIMIT = 200


def recorded_chat(runtime: Runtime) -> RecordedChat | None:
    """The chat log, when it is on."""
    return runtime.chat_log if isinstance(runtime.chat_log, RecordedChat) else None


def chat_row_json(row: ChatRow) -> dict[str, Any]:
    """A chat-log row as the API shows it."""
    return {
        "id": row.id,
        "created_at": row.created_at,
        "role": row.role,
        "speaker_id": row.speaker_id,
        "speaker_name": row.speaker_name,
        "text": row.text,
        "addressed": row.addressed,
        "refused": row.refused,
    }


async def chat_log_rows(
    runtime: Runtime, scope: Scope, query: str | None, limit: int
) -> list[dict[str, Any]]:
    """The chat's newest rows (oldest first), or with `query` its best matches."""
    recorded = recorded_chat(runtime)
    if recorded is None or scope.is_personal:
        return []
    limit = max(1, min(limit, CHAT_LOG_MAX_LIMIT))
    await recorded.flush()
    store, chat_key = recorded.writer.store, scope.log_chat.key
    if query and query.strip():
        rows = await store.search(chat_key, query, limit)
    else:
        rows = await store.recent(chat_key, limit)
    return [chat_row_json(row) for row in rows]
