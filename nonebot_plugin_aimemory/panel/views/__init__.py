"""What the panel's JSON API answers, built from the running bot's parts: the overview of
every chat (`overview`), one scope's memories (`memories`, read and changed through
MemoryService, so through the same rules as the tools and commands), its chat log
(`chat_log`), usage (`usage`) and review state (`review`). No web framework here:
routes.py turns these into HTTP.

This face offers what is loaded with the plugin; the views read only once the panel is
mounted (`review`, `usage`, `try_chat`, `time_zone`) are not re-exported, so a bot without
the panel never loads them: they are imported as modules or from their modules."""

from __future__ import annotations

from . import chat_log, memories
from .chat_log import CHAT_LOG_DEFAULT_LIMIT, chat_log_rows
from .errors import PanelError, bad_request, refusal
from .known_chats import scope_is_known
from .memories import existing_memory, memories_of, require_service
from .memory_bodies import MemoryCreate, MemoryPatch, read_body
from .overview import ChatNameSource, NoNames, PanelData

__all__ = [
    "CHAT_LOG_DEFAULT_LIMIT",
    "ChatNameSource",
    "MemoryCreate",
    "MemoryPatch",
    "NoNames",
    "PanelData",
    "PanelError",
    "bad_request",
    "chat_log",
    "chat_log_rows",
    "existing_memory",
    "memories",
    "memories_of",
    "read_body",
    "refusal",
    "require_service",
    "scope_is_known",
]
