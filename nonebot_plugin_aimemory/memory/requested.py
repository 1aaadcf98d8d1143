"""A member who asks the bot to remember something ("记住：我在星河科技上班") is told it is
remembered: a real model often says "好的，已经保存" without calling `memory_save` (issue
#36: 0 of 2 such facts saved by Qwen2.5-Coder-1.5B, each answered "已保存"). So when a turn
on such a message ends without a save, the message itself is kept, through every rule a
tool save passes (guard, masks, tombstones, cap), attributed to its speaker, before the
answer goes out: what the member was told is true when they read it."""

from __future__ import annotations

import logging

from ..engine import SavesInTurn, TurnSpeaker
from .attribution import spoken_by
from .personal import MemoryView, personal_view
from .requests import requested_fact
from .rules import speaks_in_first_person
from .service import MemoryService

logger = logging.getLogger("nonebot_plugin_aimemory")


class RequestedSaves:
    """Keeps what a member asked to be remembered when the turn's model did not: what they
    say about themselves in their personal memories (public when said in a group, so it is
    there in their private chat too; personal.py), anything else in the chat's."""

    def __init__(self, memory: MemoryService, *, personal: bool = True) -> None:
        self.memory = memory
        self.personal = personal

    async def keep(self, scope: str, text: str, speaker: TurnSpeaker, saves: SavesInTurn) -> bool:
        """Save the fact `text` asks `speaker`'s turn to keep in `scope` unless the turn
        saved something; whether it was saved now. Never raises: the answer goes out
        regardless."""
        fact = requested_fact(text)
        if fact is None or saves.count:
            return False
        user_id = speaker.user_id or None
        who = f"{speaker.name}({user_id})" if user_id else speaker.name
        view = self._speakers_own(scope, fact, speaker)
        try:
            outcome = await self.memory.save(
                view.scope if view is not None else scope,
                f"{who}说：{fact}",
                user_id=user_id,
                source="tool",
                private=view is not None and view.include_private,
                provenance=spoken_by(speaker, "said"),  # their own words, as they asked
            )
        except Exception:
            logger.exception("could not keep the fact %s asked to remember", scope)
            return False
        logger.info("%s: kept what the member asked to remember (%s)", scope, outcome.status)
        return outcome.status == "saved"

    def _speakers_own(self, scope: str, fact: str, speaker: TurnSpeaker) -> MemoryView | None:
        """The speaker's personal memories when `fact` is about the speaker (said in the
        first person) and personal memory is on; None for the chat's."""
        if not self.personal or not speaks_in_first_person(fact):
            return None
        return personal_view(scope, speaker)


class NoRequestedSaves:
    """No long-term memory: nothing to keep."""

    async def keep(self, scope: str, text: str, speaker: TurnSpeaker, saves: SavesInTurn) -> bool:
        """Nothing is saved."""
        return False
