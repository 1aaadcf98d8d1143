"""Long-term memory: `MemoryService` (every read and write, through the rules), the guard,
extraction before compression, and the memory tools and commands."""

from __future__ import annotations

from . import attribution, grounding
from .commands import MemoryCommands
from .extractor import FactExtractor
from .feature import LongTermMemory, MemoryOff, NoExtraction
from .inject import NoRelevantMemories, RelevantMemories
from .owner_copies import OwnerCopies
from .placement import memory_key_for
from .requests import without_request
from .rules import MISSING, Missing, speaks_in_first_person
from .service import MemoryFull, MemoryService, SaveOutcome, UpdateOutcome
from .shared_guard import SharedScopeGuard

__all__ = [
    "MISSING",
    "FactExtractor",
    "LongTermMemory",
    "MemoryCommands",
    "MemoryFull",
    "MemoryOff",
    "MemoryService",
    "Missing",
    "NoExtraction",
    "NoRelevantMemories",
    "OwnerCopies",
    "RelevantMemories",
    "SaveOutcome",
    "SharedScopeGuard",
    "UpdateOutcome",
    "attribution",
    "grounding",
    "memory_key_for",
    "speaks_in_first_person",
    "without_request",
]
