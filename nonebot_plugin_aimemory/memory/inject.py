"""Auto-inject: the memories most relevant to a message go before it, for that turn only;
the window keeps (and the store persists) the message without them. The chat's memories and
the speaker's personal ones visible in the chat are ranked together, within one budget."""

from __future__ import annotations

import logging

from .. import prompts
from ..engine.messages import Message, TextPart
from ..engine.turn_context import TurnSpeaker
from ..engine.turn_trace import note_memories
from .personal import MemoryView, personal_view
from .service import MemoryService

logger = logging.getLogger("nonebot_plugin_aimemory")


class RelevantMemories:
    """Looks up the scope's memories relevant to the message (and, with `personal`, the
    speaker's visible personal ones) and puts them before it."""

    def __init__(
        self, memory: MemoryService, *, top_k: int, max_chars: int, personal: bool = True
    ) -> None:
        self.memory = memory
        self.top_k = top_k
        self.max_chars = max_chars
        self.personal = personal

    async def prepend(
        self, scope: str, message: Message, query: str, speaker: TurnSpeaker | None = None
    ) -> tuple[Message, str | None]:
        """The message with the memories before it, and the text to persist instead; the
        message unchanged (and None) when nothing relevant is found."""
        views = [MemoryView(scope)]
        speakers = personal_view(scope, speaker) if self.personal else None
        if speakers is not None:
            views.append(speakers)
        try:
            hits = await self.memory.relevant_in(views, query, self.top_k)
        except Exception:
            # Memories help; they must never stop an answer (database gone, disk full...).
            logger.exception("could not look up memories for %s; answering without them", scope)
            return message, None
        block = prompts.memory_injection(
            [hit.memory for hit in hits],
            self.max_chars,
            personal={hit.memory.id for hit in hits if hit.personal},
            zone=self.memory.zone,
        )
        if not block:
            return message, None
        note_memories(block)
        parts = message.content if isinstance(message.content, tuple) else (TextPart(message.text),)
        notes = f"{block}\n{prompts.MEMORY_INJECTION_FOOTER}\n"
        injected = Message("user", (TextPart(notes), *parts))
        if all(isinstance(p, TextPart) for p in parts):
            injected = Message("user", injected.text)
        return injected, message.text


class NoRelevantMemories:
    """Auto-inject off, or no long-term memory: messages go as they are."""

    async def prepend(
        self, scope: str, message: Message, query: str, speaker: TurnSpeaker | None = None
    ) -> tuple[Message, str | None]:
        """The message unchanged."""
        return message, None
