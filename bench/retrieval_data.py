"""The retrieval bench's data: conversations of timed messages, and questions whose evidence
names the messages stating their answer (read by retrieval_memorybank, _locomo, _memdaily)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

Language = Literal["zh", "en"]
Role = Literal["user", "assistant"]
Chat = Literal["private", "group"]
# A message's id within its conversation (the set's own where it has one, "D1:3").
MessageKey = str
NO_CATEGORY = ""


@dataclass(frozen=True)
class Message:
    """One chat line: who said it when, and the exchange (`turn`) it belongs to. A memory
    holding a message holds its turn: a memory of an utterance finds an answer its reply
    states. `memorable`: the bench saves it as a memory too (what a person said)."""

    key: MessageKey
    turn: str
    role: Role
    speaker: str
    text: str
    at: datetime  # local time, naive; a minute of its own within the conversation
    memorable: bool


@dataclass(frozen=True)
class Conversation:
    """One chat's messages, oldest first: a private chat of a user and the companion, or a
    group chat of several people."""

    id: str
    chat: Chat
    messages: tuple[Message, ...]

    @property
    def speakers(self) -> tuple[str, ...]:
        """The people who speak, in order of their first line."""
        return tuple(dict.fromkeys(m.speaker for m in self.messages if m.role == "user"))


@dataclass(frozen=True)
class Question:
    """A question about a conversation and the pieces of its answer, each stated by any one
    of its messages (no piece: the conversation does not answer it)."""

    conversation: str
    text: str
    category: str
    evidence: tuple[tuple[MessageKey, ...], ...]


@dataclass(frozen=True)
class Dataset:
    """One set of the table: its language (which BM25 splits), the line naming its data,
    its question categories in the order the table lists them."""

    name: str
    language: Language
    source: str
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]
    categories: tuple[str, ...] = ()

    @property
    def answerable(self) -> tuple[Question, ...]:
        """Questions with evidence (the others count in no recall)."""
        return tuple(q for q in self.questions if q.evidence)


def distinct_minutes(moments: Iterable[datetime]) -> list[datetime]:
    """`moments` (oldest first) moved on to the next free minute where two share one, so a
    chat line's minute names its message."""
    placed: list[datetime] = []
    for moment in moments:
        minute = moment.replace(second=0, microsecond=0)
        if placed and minute <= placed[-1]:
            minute = placed[-1] + timedelta(minutes=1)
        placed.append(minute)
    return placed


def document(conversation: Conversation, message: Message) -> str:
    """What a baseline indexes of a chat line, and what the product saves of it as a memory:
    its text, after its speaker's name in a group chat (who said it is part of what a
    reader of the log knows, and the plugin asks the model to write memories that name
    their subject; in a private chat it is the user or the companion)."""
    if conversation.chat == "group" and message.role == "user":
        return f"{message.speaker}: {message.text}"
    return message.text
