"""Who is speaking in the turn being answered: set by the conversation from the event before
the model is called, read by tools that act for that person (personal memories). The model
never supplies it; a tool called outside a turn sees nobody. Also whose words the turn's
messages carry (`Voice`: the speaker's own, a quoted message's, forwarded lines'), which a
memory saved in the turn is attributed by, and the chat a turn's model calls are counted
for (usage)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class TurnSpeaker:
    """The sender of the message a turn answers: their QQ number, and whether the chat is
    their private chat with the bot (what is said there stays there)."""

    user_id: str
    in_private_chat: bool
    # The name they go by in the chat now, and the chat's key (`g:<群号>`, `f:<QQ号>`).
    name: str = ""
    chat: str = ""


@dataclass(frozen=True, slots=True)
class Voice:
    """Words a turn's messages carry and who said them: the speaker's own (`said`), a quoted
    message's or a forwarded line's author (`user_id` None when not reported)."""

    how: Literal["said", "quoted", "forwarded"]
    user_id: str | None
    name: str
    text: str


_current: ContextVar[TurnSpeaker | None] = ContextVar("aimemory_turn_speaker", default=None)
_voices: ContextVar[tuple[Voice, ...]] = ContextVar("aimemory_turn_voices", default=())
# The chat whose token usage the model calls made here count for (engine/usage.py). Kept
# here, beside the speaker, so that background tasks can start without it (background.py).
usage_chat: ContextVar[str | None] = ContextVar("aimemory_usage_chat", default=None)


def current_speaker() -> TurnSpeaker | None:
    """The speaker of the turn this code runs in, or None outside a turn."""
    return _current.get()


@contextmanager
def speaking(speaker: TurnSpeaker | None) -> Iterator[None]:
    """Run the enclosed code (a turn: model calls and tool calls) as `speaker`'s turn."""
    token = _current.set(speaker)
    try:
        yield
    finally:
        _current.reset(token)


@dataclass
class SavesInTurn:
    """How many times the turn's tools saved a memory (or tried to: a refusal counts)."""

    count: int = 0


_saves: ContextVar[SavesInTurn | None] = ContextVar("aimemory_saves_in_turn", default=None)


@contextmanager
def watching_saves() -> Iterator[SavesInTurn]:
    """Count the memory saves of the enclosed turn."""
    saves = SavesInTurn()
    token = _saves.set(saves)
    try:
        yield saves
    finally:
        _saves.reset(token)


def note_save() -> None:
    """A tool of the current turn saved a memory, or tried to."""
    saves = _saves.get()
    if saves is not None:
        saves.count += 1


def current_voices() -> tuple[Voice, ...]:
    """The voices of the turn this code runs in (none outside a turn)."""
    return _voices.get()


@contextmanager
def hearing(voices: Sequence[Voice]) -> Iterator[None]:
    """Run the enclosed code (the model's part of a turn) with these voices heard."""
    token = _voices.set(tuple(voices))
    try:
        yield
    finally:
        _voices.reset(token)
