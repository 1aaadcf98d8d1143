"""Auto-inject: the block of memories most relevant to a message, put before it for that
turn only (conversation/notes.py); the window keeps (and the store persists) the message
without them. The chat's memories and the speaker's personal ones visible in the chat are
ranked together, within one budget. A member asking for something of their own, when no
note about them is found by its words ("我开的是什么车来着？" against "我的小米SU7今天提示胎
压低"), is shown their newest personal notes: what a person would think over."""

from __future__ import annotations

import logging

from .. import prompts
from ..engine import TurnSpeaker
from ..text import recalls_oneself
from .personal import MemoryView, personal_view
from .search import SearchHit
from .service import MemoryService

logger = logging.getLogger("nonebot_plugin_aimemory")


class RelevantMemories:
    """Looks up the scope's memories relevant to a message (and, with `personal`, the
    speaker's visible personal ones)."""

    def __init__(
        self, memory: MemoryService, *, top_k: int, max_chars: int, personal: bool = True
    ) -> None:
        self.memory = memory
        self.top_k = top_k
        self.max_chars = max_chars
        self.personal = personal

    async def block(self, scope: str, query: str, speaker: TurnSpeaker | None = None) -> str:
        """The block of memories relevant to `query` ('' when none is found)."""
        views = [MemoryView(scope)]
        speakers = personal_view(scope, speaker) if self.personal else None
        if speakers is not None:
            views.append(speakers)
        try:
            hits = await self.memory.relevant_in(views, query, self.top_k)
            if speaker is not None and speakers is not None and recalls_oneself(query):
                hits += await self._own_notes(speakers, hits, speaker.user_id)
        except Exception:
            # Memories help; they must never stop an answer (database gone, disk full...).
            logger.exception("could not look up memories for %s; answering without them", scope)
            return ""
        return prompts.memory_injection(
            [hit.memory for hit in hits],
            self.max_chars,
            personal={hit.memory.id for hit in hits if hit.personal},
            zone=self.memory.zone,
        )

    async def _own_notes(
        self, speakers: MemoryView, hits: list[SearchHit], user_id: str
    ) -> list[SearchHit]:
        """The speaker's newest personal notes, when no note found by its words is about
        them: one that is answers the question better than any other of theirs, and the
        real small model, shown the note about the daughter with the one about the cat,
        first answered the daughter's name with the cat's."""
        room = self.top_k - len(hits)
        if room <= 0 or any(hit.personal or hit.memory.user_id == user_id for hit in hits):
            return []
        return await self.memory.search_in([speakers], None, room, safe_only=True)


class NoRelevantMemories:
    """Auto-inject off, or no long-term memory: no memories go before a message."""

    async def block(self, scope: str, query: str, speaker: TurnSpeaker | None = None) -> str:
        """Nothing."""
        return ""
