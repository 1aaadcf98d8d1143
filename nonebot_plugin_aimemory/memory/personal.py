"""Personal memories: what a person tells about themselves, kept under `u:<QQ号>` (another
persona's under `u:<QQ号>#<persona>`, see scopes.py) and used wherever that person is
the speaker. One saved in a group is public: used in any chat where its owner speaks. One
saved in the owner's private chat is private: used only there, until its owner makes it
public. A chat sees only its current speaker's personal memories, and the speaker comes from
the turn (engine/turn_context.py), never from an argument the model or a person types. An
anonymous sender has none: their turn has no QQ number (conversation/incoming.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..scopes import Scope, qq_number

if TYPE_CHECKING:
    from ..engine import TurnSpeaker
    from ..store import MemoryRecord


@dataclass(frozen=True, slots=True)
class MemoryView:
    """One scope's memories as a chat may use them: the scope, whether its private memories
    are visible there, and whether they are a person's (their lines are marked so)."""

    scope: str
    include_private: bool = True
    personal: bool = False

    def shows(self, record: MemoryRecord) -> bool:
        """Whether this chat may see the memory."""
        return self.include_private or not record.private


def is_personal_scope(scope: str) -> bool:
    """Whether `scope` holds a person's memories rather than a chat's."""
    return Scope.parse(scope).is_personal


def personal_scope(chat_scope: str, user_id: str) -> str:
    """Where `user_id`'s personal memories of the persona `chat_scope` belongs to live."""
    return str(Scope.parse(chat_scope).personal(user_id))


def is_anonymous(speaker: TurnSpeaker | None) -> bool:
    """Whether the turn's speaker is anonymous: there is a speaker, but no QQ number to keep
    personal memories under (the one OneBot reports for an anonymous group sender is
    shared by all of them; 0 or a negative id names nobody)."""
    return speaker is not None and qq_number(speaker.user_id) is None


def personal_view(chat_scope: str, speaker: TurnSpeaker | None) -> MemoryView | None:
    """The speaker's personal memories as the chat `chat_scope` may use them: all of them in
    the speaker's own private chat, the public ones anywhere else; None without a speaker
    or for an anonymous one."""
    if speaker is None or is_anonymous(speaker):
        return None
    chat = Scope.parse(chat_scope)
    own_private_chat = speaker.in_private_chat and chat.is_private_chat_of(speaker.user_id)
    return MemoryView(
        str(chat.personal(speaker.user_id)), include_private=own_private_chat, personal=True
    )


def someones_memories(chat_scope: str, user_id: str) -> MemoryView:
    """Every personal memory of `user_id` under the persona of `chat_scope`, private ones
    included: for a SUPERUSER deleting them, never for showing them."""
    return MemoryView(personal_scope(chat_scope, user_id), include_private=True, personal=True)
