"""A fact the background writers (the reviewer, extraction before a fold) draw from a
member's own words about themselves is also kept in that member's personal memories,
privately, so that their private chat with the bot knows what they told the group (issue
#36: asked again in private, a 1.5B model answered 4 of 10 facts; those told in passing
lived only in the group's memories).

Private, because the member did not ask for it to travel: it is used in their own private
chat with the bot and nowhere else, never in another group, until they make it public with
`~记忆 我的 公开`. Only a fact said in a group and about the very person whose words it was
drawn from (its subject "名字(QQ)" is who said it) is copied: a fact about someone else
stays the group's, and so does one said by nobody the log knows. When the reviewer later
corrects the group's memory, the copy is corrected with it."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..scopes import Scope, qq_number
from ..store import MemoryRecord, Provenance
from .personal import personal_scope
from .requests import subject_id
from .rules import normalize
from .service import MemoryService, SaveOutcome, Source

logger = logging.getLogger("nonebot_plugin_aimemory")


class OwnerCopies:
    """Saves a background writer's fact in its chat, and one about a member in that
    member's private personal memories too (not when personal memory is off)."""

    def __init__(self, memory: MemoryService, *, personal: bool) -> None:
        self.memory = memory
        self.personal = personal

    async def save(
        self,
        scope: str,
        content: str,
        *,
        tags: Sequence[object] | None,
        user_id: str | None,
        source: Source,
        provenance: Provenance,
        evidence: Sequence[int] = (),
    ) -> SaveOutcome:
        """Save `content` in `scope` through every rule and, once saved, copy it."""
        saved = await self.memory.save(
            scope,
            content,
            tags=tags,
            user_id=user_id,
            source=source,
            evidence=evidence,
            provenance=provenance,
        )
        if saved.status == "saved" and saved.memory is not None:
            await self._copy(scope, saved.memory, source)
        return saved

    async def _copy(self, chat_scope: str, record: MemoryRecord, source: Source) -> bool:
        """Copy `record`, just saved in the group `chat_scope` (as the rules kept it), to
        its owner's personal memories when it is about whoever said it; whether a copy was
        saved. Never raises: the group's memory is kept regardless."""
        owner = self.owner_of(chat_scope, record.content, record.provenance)
        if owner is None:
            return False
        scope = personal_scope(chat_scope, owner)
        try:
            outcome = await self.memory.save(
                scope,
                record.content,
                tags=record.tags,
                user_id=owner,
                source=source,
                private=True,
                provenance=record.provenance,
            )
        except Exception:
            logger.exception("could not copy a fact of %s to %s", chat_scope, scope)
            return False
        logger.info("copied a fact of %s to its owner's %s (%s)", chat_scope, scope, outcome.status)
        return outcome.status == "saved"

    async def follow(self, chat_scope: str, before: MemoryRecord, content: str) -> int:
        """Rewrite as `content` the private copies of `before`, a memory of the group
        `chat_scope` just rewritten so: the member's private chat must not keep what the
        group corrected. How many were rewritten; never raises."""
        owner = self.owner_of(chat_scope, before.content, before.provenance)
        if owner is None:
            return 0
        scope, was = personal_scope(chat_scope, owner), normalize(before.content)
        try:
            listed = await self.memory.list(scope)
            copies = [r for r in listed if r.private and normalize(r.content) == was]
            for copy in copies:
                await self.memory.update(scope, copy.id, content=content)
            return len(copies)
        except Exception:
            logger.exception("could not follow a rewrite of %s in %s", chat_scope, scope)
            return 0

    def owner_of(self, chat_scope: str, content: str, provenance: Provenance) -> str | None:
        """The QQ number of the member `content` is about when they said it in a group."""
        said_by = provenance.said_by
        speaker = qq_number(said_by.user_id) if said_by is not None else None
        if not self.personal or speaker is None or not Scope.parse(chat_scope).is_group:
            return None
        return speaker if subject_id(content) == speaker else None
