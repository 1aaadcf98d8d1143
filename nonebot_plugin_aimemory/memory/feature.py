"""Long-term memory as one feature: the service and everything built on it (tools,
commands, auto-inject, extraction before compaction), or the null twin without a database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..engine.background import Background
from ..engine.messages import Message
from ..engine.tools import Tool
from .commands import MemoryCommands, MemoryUnavailable
from .extractor import FactExtractor
from .inject import NoRelevantMemories, RelevantMemories
from .service import MemoryService
from .tools import memory_tools


class NoExtraction:
    """Extraction before compaction is off: folded messages are only summarised."""

    async def on_pre_compact(self, key: str, messages: Sequence[Message]) -> None:
        """Nothing to extract."""

    async def drain(self) -> None:
        """Nothing is running."""


@dataclass
class LongTermMemory:
    """Memories kept in the database, per scope."""

    service: MemoryService
    commands: MemoryCommands
    relevant: RelevantMemories | NoRelevantMemories
    extractor: FactExtractor | NoExtraction
    _background: Background = field(default_factory=lambda: Background("long-term memory"))

    def tools(self, scope: str) -> list[Tool]:
        """The memory tools bound to `scope`."""
        return list(memory_tools(self.service, scope))

    def start(self) -> None:
        """With embeddings configured, fill in the vectors of memories stored without one."""
        if self.service.embedder.enabled:
            self._background.spawn(self.service.backfill_embeddings())

    async def close(self) -> None:
        """Let running extractions and the startup backfill finish, then stop a backfill
        started after an embedding outage (it is resumed after the next start)."""
        await self.extractor.drain()
        await self._background.wait()
        await self.service.close()


@dataclass
class MemoryOff:
    """No database: no tools, commands say memory is unavailable, nothing is injected."""

    commands: MemoryUnavailable = field(default_factory=MemoryUnavailable)
    relevant: NoRelevantMemories = field(default_factory=NoRelevantMemories)
    extractor: NoExtraction = field(default_factory=NoExtraction)

    def tools(self, scope: str) -> list[Tool]:
        """No memory tools."""
        return []

    def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to close."""
