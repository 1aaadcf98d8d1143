"""The conversation over the built parts, with the `~对话`, `~记忆` and `~人设` commands it
answers: the turn as a use case, built once by the composition root (runtime.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .chatlog import ChatLogOff, RecordedChat
from .config import Config
from .conversation import (
    Commands,
    Conversation,
    DialogCommands,
    GroupAutoClear,
    MessageClaims,
    SessionCache,
    text_tools_ready,
)
from .engine import Compressor, EstimatingCounter, TiktokenCounter, UsageRecorder
from .memory import LongTermMemory, MemoryOff
from .personas import PersonaCommands, Personas
from .store import Backend, MessageClaimStore


class Assembly(Protocol):
    """What the composition root builds every part with (runtime.py's builder)."""

    config: Config
    usage: UsageRecorder
    memory_key: Callable[[str], str]


def conversation_and_commands(
    assembly: Assembly,
    sessions: SessionCache,
    autoclear: GroupAutoClear,
    counter: TiktokenCounter | EstimatingCounter,
    compressor: Compressor,
    personas: Personas,
    memory: LongTermMemory | MemoryOff,
    chat_log: RecordedChat | ChatLogOff,
    database: Backend | None,
) -> Conversation:
    """The turn as a use case, with the `~对话`, `~记忆` and `~人设` commands."""
    config, usage, memory_key = assembly.config, assembly.usage, assembly.memory_key
    dialog = DialogCommands(
        sessions,
        counter,
        budget_tokens=compressor.policy.budget_tokens,
        persistent=database is not None,
        zone=config.zone,
        personas=personas,
        usage=usage,
        daily_quota_tokens=config.aimemory_daily_tokens_per_chat,
    )
    return Conversation(
        sessions=sessions,
        autoclear=autoclear,
        chat_log=chat_log,
        memories=memory.for_turns,
        commands=Commands(dialog, memory.commands, PersonaCommands(personas), personas, memory_key),
        zone=config.zone,
        configured=config.configured,
        log_ambient=config.aimemory_chat_log_ambient,
        usage=usage,
        daily_quota_tokens=config.aimemory_daily_tokens_per_chat,
        window_key=personas.window_key,
        memory_key=memory_key,
        copies=MessageClaims(MessageClaimStore(database) if database else None),
        prepare=lambda: text_tools_ready(counter),
    )
