"""A second reader for memories that other people will be shown: the configured cheap model
(the "guard" role, falling back to the reviewer's settings) reads a note as data and says
whether it steers the bot. It answers one word; anything else, an error or a timeout is no
verdict, and the caller falls back to the rules (`memory/shared_guard.py`)."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Protocol

from ..engine.errors import LLMError
from ..engine.llm import LLMClient
from ..engine.messages import Message
from ..prompts import GUARD_CHECK_PROMPT, guard_check_note

logger = logging.getLogger("nonebot_plugin_aimemory")

# The whole check, retries included: a member waits for it in their turn.
CHECK_TIMEOUT_SECONDS = 20.0
# The answer's first word (a model may answer in the note's language).
YES, NO = ("yes", "是"), ("no", "否", "不")
_FIRST_WORD = re.compile(r"[a-z]+")


class SteeringCheck(Protocol):
    """Says whether a note steers the bot: True, False, or None for no verdict."""

    async def steers(self, note: str, earlier: str | None = None) -> bool | None:
        """The verdict on `note`, read after `earlier` (the scope's last note) if given."""
        ...


class NoModelCheck:
    """The check is off: no verdict, the rules alone decide."""

    async def steers(self, note: str, earlier: str | None = None) -> bool | None:
        """No verdict."""
        return None


class ModelCheck:
    """Asks a chat model whether a note steers the bot, within `timeout_seconds`."""

    def __init__(self, llm: LLMClient, timeout_seconds: float = CHECK_TIMEOUT_SECONDS) -> None:
        self.llm = llm
        self.timeout_seconds = timeout_seconds

    async def steers(self, note: str, earlier: str | None = None) -> bool | None:
        """True when the model says the note steers, False when it says it is a plain
        note, None when it could not be asked or gave no such answer (logged)."""
        messages = [
            Message("system", GUARD_CHECK_PROMPT),
            Message("user", guard_check_note(note, earlier)),
        ]
        asked = self.llm.complete(messages, context="guard check", extra={"temperature": 0})
        try:
            completion = await asyncio.wait_for(asked, self.timeout_seconds)
        except (LLMError, asyncio.TimeoutError) as exc:
            logger.warning(
                "guard check failed (model=%s): %s; the rules decide", self.llm.model, exc
            )
            return None
        return verdict_of(completion.message.text, model=self.llm.model)


def verdict_of(answer: str, *, model: str = "") -> bool | None:
    """The one-word answer read: True for yes, False for no, None for anything else."""
    said = answer.strip().lstrip("*\"'“「").lower()
    word = _FIRST_WORD.match(said)
    if word.group(0) in YES if word else said.startswith(YES):
        return True
    if word.group(0) in NO if word else said.startswith(NO):
        return False
    logger.warning("guard check gave no verdict (model=%s): %.80r", model, answer)
    return None
