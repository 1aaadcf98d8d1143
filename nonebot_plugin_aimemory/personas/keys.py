"""Keys of what a persona owns in a chat. The default persona keeps the chat's own key
(`g:<群号>` / `f:<QQ号>`, so existing windows and memories stay where they are); another
persona's window, memories and review state live under `<chat key>#<persona>`, and a
speaker's personal memories under `u:<QQ号>#<persona>`. The chat log is keyed by the chat."""

from __future__ import annotations

from .catalog import DEFAULT_PERSONA

PERSONA_SEPARATOR = "#"


def persona_key(chat_key: str, persona: str) -> str:
    """The key of `persona`'s part of a chat (or of a person's memories)."""
    if persona == DEFAULT_PERSONA:
        return chat_key
    return f"{chat_key}{PERSONA_SEPARATOR}{persona}"


def chat_key_of(key: str) -> str:
    """The chat a persona key belongs to (the key itself for the default persona)."""
    return key.partition(PERSONA_SEPARATOR)[0]


def persona_of(key: str) -> str:
    """The persona a key belongs to."""
    return key.partition(PERSONA_SEPARATOR)[2] or DEFAULT_PERSONA
