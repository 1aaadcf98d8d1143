"""Long-term memory as one feature: the service and everything built on it (tools,
commands, auto-inject, extraction before compaction), or the null twin without a database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..engine import Background, Message, SavesInTurn, Tool, TurnSpeaker
from .commands import MemoryCommands, MemoryUnavailable
from .extractor import FactExtractor
from .inject import NoRelevantMemories, RelevantMemories
from .requested import NoRequestedSaves, RequestedSaves
from .service import MemoryService
from .tools import memory_tools

PURGE_INTERVAL_SECONDS = 24 * 3600
# At shutdown, background work (a backfill of vectors) gets this long before it is cancelled.
SHUTDOWN_GRACE_SECONDS = 3.0


class NoExtraction:
    """Extraction before compaction is off: folded messages are only summarised."""

    async def on_pre_compact(self, key: str, messages: Sequence[Message]) -> None:
        """Nothing to extract."""

    async def drain(self) -> None:
        """Nothing is running."""


@dataclass(frozen=True, slots=True)
class TurnMemories:
    """What a turn asks of long-term memory: the memories put before its message, and,
    once it is answered, what its member asked to remember and the model did not keep."""

    relevant: RelevantMemories | NoRelevantMemories
    requested: RequestedSaves | NoRequestedSaves

    async def block(self, scope: str, query: str, speaker: TurnSpeaker | None = None) -> str:
        """The block of memories relevant to `query` (see inject.py)."""
        return await self.relevant.block(scope, query, speaker)

    async def keep_requested(
        self, scope: str, text: str, speaker: TurnSpeaker, saves: SavesInTurn
    ) -> bool:
        """Keep what `text` asked to be remembered, unless the turn saved (requested.py)."""
        return await self.requested.keep(scope, text, speaker, saves)


@dataclass
class LongTermMemory:
    """Memories kept in the database, per scope."""

    service: MemoryService
    commands: MemoryCommands
    relevant: RelevantMemories | NoRelevantMemories
    extractor: FactExtractor | NoExtraction
    # Whether the tools also reach the current speaker's personal memories.
    personal: bool = True
    _background: Background = field(default_factory=lambda: Background("long-term memory"))

    @property
    def for_turns(self) -> TurnMemories:
        """What each turn asks of long-term memory."""
        return TurnMemories(self.relevant, RequestedSaves(self.service, personal=self.personal))

    def tools(self, scope: str) -> list[Tool]:
        """The memory tools bound to `scope` (and to the speaker of each turn)."""
        return list(memory_tools(self.service, scope, personal=self.personal))

    def start(self) -> None:
        """Purge long-deleted memories now and daily; with embeddings configured, fill in
        the vectors of memories stored without one."""
        self._background.every(
            PURGE_INTERVAL_SECONDS,
            self.service.purge_deleted,
            first_delay_seconds=0,
            name="purge deleted memories",
        )
        if self.service.embedder.enabled:
            self._background.spawn(self.service.backfill_embeddings())

    async def close(self) -> None:
        """Give running extractions and the startup backfill a short grace period (what is
        left is cancelled; a backfill resumes after the next start), stop the purge loop,
        give the guard's checks after a turn the same, then stop a backfill started after
        an embedding outage."""
        await self.extractor.drain()
        await self._background.settle(SHUTDOWN_GRACE_SECONDS)
        await self._background.close(cancel=True)
        await self.service.close(SHUTDOWN_GRACE_SECONDS)


@dataclass
class MemoryOff:
    """No database: no tools, commands say memory is unavailable, nothing is injected."""

    commands: MemoryUnavailable = field(default_factory=MemoryUnavailable)
    relevant: NoRelevantMemories = field(default_factory=NoRelevantMemories)
    extractor: NoExtraction = field(default_factory=NoExtraction)

    @property
    def for_turns(self) -> TurnMemories:
        """Nothing put before a message, nothing kept after it."""
        return TurnMemories(self.relevant, NoRequestedSaves())

    def tools(self, scope: str) -> list[Tool]:
        """No memory tools."""
        return []

    def start(self) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to close."""
