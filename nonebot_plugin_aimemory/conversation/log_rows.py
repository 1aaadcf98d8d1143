"""The chat-log rows of a conversation: what a person said, what the bot answered. A chat has
one log, whichever bot account heard or spoke (the account is kept with the bot's lines)."""

from __future__ import annotations

from ..store.chat_log_store import ChatRow
from ..store.database import utc_now_text, utc_text
from .incoming import Incoming


def user_row(incoming: Incoming, text: str, *, addressed: bool = True) -> ChatRow:
    """A person's message as a chat-log row."""
    return ChatRow(
        session_key=incoming.log_key,
        created_at=utc_text(incoming.sent_at),
        role="user",
        text=text,
        speaker_id=incoming.speaker.user_id,
        speaker_name=incoming.speaker.name,
        addressed=addressed,
    )


def assistant_row(answered: Incoming, reply: str) -> ChatRow:
    """The chat-log row of what the bot said, in answer to `answered`: in the chat's one
    log, with the account that spoke."""
    return ChatRow(
        session_key=answered.log_key,
        created_at=utc_now_text(),
        role="assistant",
        text=reply,
        speaker_id=answered.account or None,
    )
