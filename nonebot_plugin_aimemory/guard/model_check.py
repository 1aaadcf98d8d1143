"""A second reader for memories that other people will be shown: the configured cheap model
(the "guard" role, falling back to the reviewer's settings) reads a note as data and says
yes (it steers the bot) or no. Where the server gives the answer's log-probabilities, the
verdict is the probability of yes against a threshold measured on held-out data (a small
model leans to yes, and its first word says less than its odds); elsewhere the word
stands. An error, a timeout or another answer is no verdict, and the caller falls back to
the rules (`memory/shared_guard.py`)."""

from __future__ import annotations

import asyncio
import logging
import math
import re
from typing import Any, Protocol

from ..engine import Completion, LLMClient, LLMError, Message, in_background_work
from ..prompts import GUARD_CHECK_PROMPT, guard_check_note

logger = logging.getLogger("nonebot_plugin_aimemory")

# The whole check, retries included, when a member waits for it in their turn.
CHECK_TIMEOUT_SECONDS = 20.0
# The answer's first word (a model may answer in the note's language).
YES, NO = ("yes", "是"), ("no", "否", "不")
_FIRST_WORD = re.compile(r"[a-z]+")
# P(yes) from which a note is refused, when the server gives log-probabilities: set on the
# development split of bench.guard's corpora for at most 1 % of ordinary chat refused.
STEERING_PROBABILITY = 0.62
_ODDS = {"logprobs": True, "top_logprobs": 5}


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
        # Cleared when the server refuses the log-probability fields: the word then stands.
        self.asks_odds = True

    async def steers(self, note: str, earlier: str | None = None) -> bool | None:
        """True when the model says the note steers, False when it says it is a plain
        note, None when it could not be asked or gave no such answer (logged)."""
        completion = await self.answer(note, earlier)
        if completion is None:
            return None
        probability = yes_probability(completion.logprobs)
        if probability is not None:
            return probability >= STEERING_PROBABILITY
        return verdict_of(completion.message.text, model=self.llm.model)

    async def answer(self, note: str, earlier: str | None = None) -> Completion | None:
        """The model's answer (with its log-probabilities where the server gives them), or
        None when none came within the timeout (logged)."""
        messages = [
            Message("system", GUARD_CHECK_PROMPT),
            Message("user", guard_check_note(note, earlier)),
        ]
        for _ in range(2):
            extra: dict[str, Any] = {"temperature": 0, **(_ODDS if self.asks_odds else {})}
            asked = self.llm.complete(messages, context="guard check", extra=extra)
            try:
                return await asyncio.wait_for(asked, self._timeout())
            except LLMError as exc:
                if not (self.asks_odds and exc.status == 400):
                    return _failed(self.llm.model, exc)
                # A server that knows no log-probabilities says so with a 400: ask for the word.
                self.asks_odds = False
            except asyncio.TimeoutError as exc:
                return _failed(self.llm.model, exc)
        return None

    def _timeout(self) -> float | None:
        """How long a member may wait for the check; in background work nobody waits, and
        the check waits its turn behind members' calls (the client's own timeout stands)."""
        return None if in_background_work() else self.timeout_seconds


def _failed(model: str, exc: Exception) -> None:
    logger.warning("guard check failed (model=%s): %r; the rules decide", model, exc)


def yes_probability(logprobs: Any) -> float | None:
    """P(yes) against P(no) at the answer's first token, from the choice's `logprobs` (the
    OpenAI shape: content[0].top_logprobs); None when they are absent or name neither."""
    try:
        top = logprobs["content"][0]["top_logprobs"]
        odds = {"yes": 0.0, "no": 0.0}
        for entry in top:
            word = str(entry["token"]).strip().lower()
            side = "yes" if word in YES else "no" if word in NO else None
            if side is not None:
                odds[side] += math.exp(float(entry["logprob"]))
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    total = odds["yes"] + odds["no"]
    return odds["yes"] / total if total > 0 else None


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
