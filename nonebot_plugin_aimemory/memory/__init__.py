"""Long-term memory: `MemoryService` (every read and write, through the rules), the guard,
extraction before compression, and the memory tools and commands."""

from __future__ import annotations

from .rules import MISSING, Missing, clean_tags, clean_user_id, is_safe_to_show, normalize
from .service import MemoryFull, MemoryService, SaveOutcome, SearchHit, Source, UpdateOutcome

__all__ = [
    "MISSING",
    "MemoryFull",
    "MemoryService",
    "Missing",
    "SaveOutcome",
    "SearchHit",
    "Source",
    "UpdateOutcome",
    "clean_tags",
    "clean_user_id",
    "is_safe_to_show",
    "normalize",
]
