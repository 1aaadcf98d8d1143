"""A member's message as conversation/incoming.py's `Content` reads it, for tests that build
an `Incoming` by hand: plain text, nothing to fetch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.conversation.incoming import RichContent
    from nonebot_plugin_aimemory.engine.messages import Part


@dataclass
class Said:
    """What a member sent, as plain text."""

    words: str
    quotes_a_message: bool = False

    def plain(self) -> list[Part]:
        from nonebot_plugin_aimemory.engine.messages import TextPart

        return [TextPart(self.words)]

    async def rich(self) -> RichContent:
        from nonebot_plugin_aimemory.conversation.incoming import RichContent

        return RichContent(self.plain(), self.words)
